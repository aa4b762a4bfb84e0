// A run's outcomes against an expectation file (docs/expectations.md): a verdict per
// result, a status per entry, and whether the run is clean. One run has one world size;
// results of several world sizes are several comparisons.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/expectations/expectation_file.hpp"
#include "harness/reports/report.hpp"

namespace rcts::harness {

enum class Verdict {
  pass,               // expected to pass, passed
  expected_fail,      // failed exactly the listed checks
  expected_skip,      // skipped for a reason its pattern matches
  expected_error,     // the implementation raised, with a message its pattern matches
  xfail,              // the case file itself expects the failure ("xfail"), no entry
  not_applicable,     // rcts does not run the case here (world size, backend): no verdict
  regression,         // expected to pass (or to be skipped), failed or errored; or skipped for another reason
  unexpected_pass,    // expected to fail or be skipped, passed: remove the entry
  different_failure,  // expected to fail, failed other checks (or errored); expected to error, errored otherwise or failed
  unexpected_skip,    // expected to pass or fail, skipped
};
std::string_view verdict_name(Verdict v);  // "expected-fail", ...
std::optional<Verdict> parse_verdict(std::string_view name);
// Whether judging can give verdict `v` to a result of outcome `o` (a report that pairs
// them otherwise contradicts itself).
bool verdict_allows(Verdict v, Outcome o);
// Every verdict, in the order reports list them.
const std::vector<Verdict>& all_verdicts();
// Whether the verdict turns the run red (strict: unexpected passes too).
bool verdict_fails(Verdict v, bool strict);

enum class EntryStatus {
  matched,     // matched at least one result of this run
  not_in_run,  // matches cases of the set, none in this run (other world size, filter)
  stale,       // matches no (selected) case of the set at a world size it names
};
std::string_view entry_status_name(EntryStatus s);  // "matched", "not-in-run", "stale-entry"

struct ResultVerdict {
  Verdict verdict = Verdict::pass;
  std::optional<size_t> entry;  // the entry that matched
  std::string note;             // what differs, e.g. "expected to fail [memory], failed [bitwise, memory]"
};

struct EntryReport {
  EntryStatus status = EntryStatus::matched;
  int matches = 0;  // results of this run it matched
};

struct ExpectationComparison {
  const ExpectationFile* file = nullptr;
  int world_size = 1;
  bool strict = false;
  std::string filter;                  // --filter; empty: the whole case set was selected
  bool subset = false;                 // a --filter, or case files named one by one
  std::vector<ResultVerdict> results;  // parallel to the results compared
  std::vector<EntryReport> entries;    // parallel to file->entries
  int count(Verdict v) const;
  int stale() const;
  bool ok() const;  // nothing that verdict_fails, and (strict) no stale entry
};

// `runs_here(i)`: whether rcts runs results[i]'s case at all in this run (its world
// size, its backend list); a result it does not run is not_applicable. `cases`: the
// whole case set, for stale entries; with a `filter` (--filter) only the cases it
// selects count for them, and an entry matching none of those is not-in-run; so with
// `named_files` (case files named one by one: the set is only part of the case set).
// Conflicting entries must have been refused (refuse_conflicts): the first matching
// entry is taken. A fail entry with a signature expects exactly that signature.
ExpectationComparison compare_expectations(const ExpectationFile& file, const std::vector<CaseInfo>& cases,
                                           const std::vector<CaseResult>& results, const std::vector<bool>& runs_here,
                                           int world_size, bool strict, const std::string& filter = "",
                                           bool named_files = false);

// The failing check kinds of a result, sorted, once each.
std::vector<std::string> failing_checks(const CaseResult& r);
// The signature of a result's failure: an item per failing check (signature_item), sorted.
std::vector<SignatureItem> failure_signature(const CaseResult& r);

// Text for the terminal: counts, then every difference and stale entry, one per line.
std::string expectation_summary(const ExpectationComparison& cmp, const std::vector<CaseResult>& results);

// Per result: {"verdict", "entry" (index or null), "note"}; and the run's section:
// file, implementation, version, strict, ok, counts by verdict, entries with status.
nlohmann::json result_expectation_json(const ExpectationComparison& cmp, size_t i);
nlohmann::json expectations_json(const ExpectationComparison& cmp);
// results_json() with both added (docs/json-report.md).
void add_expectations_json(nlohmann::json& report, const ExpectationComparison& cmp);

// The results as JUnit should count them under the expectations: an expected failure
// or skip becomes a skip saying so, a difference a failure named by its verdict, an
// unexpected pass a failure under strict, and every stale entry one more test case.
std::vector<CaseResult> junit_view(const ExpectationComparison& cmp, const std::vector<CaseResult>& results);

}  // namespace rcts::harness
