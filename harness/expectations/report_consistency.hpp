// What `rcts matrix` and `rcts merge-reports` require of the results JSONs they read
// (docs/json-report.md): a report that contradicts itself, or reports that come from
// different rcts builds or seeds, are refused rather than drawn or merged, each refusal
// naming the file, the JSON path and the value.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rcts::harness {

// Throws rcts::Error when a results document contradicts itself: a case that passed
// with a failing check; a "summary" other than the count of its cases; under an
// expectation file, a case without a verdict (or one without the file), an unknown
// verdict, a verdict its outcome cannot have (verdict_allows), counts other than the
// count of the cases' verdicts and stale entries, or an "ok" other than the one those
// verdicts give.
void check_results_consistency(const nlohmann::json& doc, const std::string& file);

// Throws rcts::Error naming both files, the key and both values when two documents
// (file, results JSON) differ in /header/version, /header/git_sha or /header/seed.
void check_same_rcts(const std::vector<std::pair<std::string, const nlohmann::json*>>& docs);

}  // namespace rcts::harness
