// Writers of run results (design §10; the model is results/result.hpp): a progress
// line per case, a fixed-width summary table, JSON and JUnit XML.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results/result.hpp"

namespace rcts::harness {

// Header block, one row per case, and summary_line() as the last line.
std::string summary_table(const RunHeader& header, const std::vector<CaseResult>& cases);

// The results document (docs/json-report.md): "schema" and "schema_version", then
// header, summary and cases, which two identical runs write identically, and last
// "timing" (start time and seconds), the only part that varies between them.
inline constexpr const char* kResultsSchema = "rcts-results";
inline constexpr int kResultsSchemaVersion = 1;
nlohmann::json results_json(const RunHeader& header, const std::vector<CaseResult>& cases);

// One testsuite per run, named junit_suite_name() ("rcts.np2"), with a testcase per
// case: classname the suite's name, name junit_case_name() ("full.block.bf16 [cpu, np2]"),
// so reports of one case set at several world sizes or backends never collide.
std::string junit_xml(const RunHeader& header, const std::vector<CaseResult>& cases);
// The <testsuite> element of junit_xml() alone (merged reports hold several).
std::string junit_testsuite(const RunHeader& header, const std::vector<CaseResult>& cases);
std::string junit_suite_name(const RunHeader& header);
std::string junit_case_name(const RunHeader& header, const CaseResult& c);

// "[ 3/41] PASS selective.core_attn.bf16 (0.12 s)"; index is 1-based. Non-passing cases
// get ": <short detail>" appended.
std::string progress_line(int index, int total, const CaseResult& c);

// Per check kind of the case, in order of first appearance, one line saying whether it
// judged something ("bitwise: judged 3 runs, all pass") or skipped and why, and what it
// did not judge ("; not judged: side effects: ..."). `rcts check` prints them.
std::vector<std::string> judged_lines(const CaseResult& c);

// The reason of the skip `rcts check --expect` gives a config_error case, which no
// implementation runs (rcts judges the config alone); rcts matrix lists such rows once.
inline constexpr const char* kConfigErrorSkip = "a config_error case: rcts judges its config alone, no implementation runs it";

// "id", or "id [backend]" when it ran on another backend than the reference.
std::string display_id(const CaseResult& c);

// One line: the reason, else the first non-passing check, cut to max_chars.
std::string short_detail(const CaseResult& c, size_t max_chars = 60);

// Escapes text for XML 1.0. In attributes newlines and tabs become character
// references (a parser would otherwise fold them to spaces); in element content they
// stay. Control characters XML 1.0 forbids are written as the visible text "\xNN".
std::string xml_escape(std::string_view s, bool attribute = true);

}  // namespace rcts::harness
