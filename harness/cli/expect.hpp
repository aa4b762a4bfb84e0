// `rcts run --expect FILE` and `rcts check DIR --expect FILE` (docs/expectations.md):
// the glue between a finished run and the expectation code: which results rcts runs
// here, the skips of cases an implementation did not dump, the terminal block, the JSON
// and JUnit reports, --update-expectations and the exit status.
#pragma once
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/cases/case.hpp"
#include "harness/cli/path_uses.hpp"
#include "harness/expectations/expectation_file.hpp"
#include "harness/reports/report.hpp"

namespace rcts::harness {

struct ExpectOptions {
  std::string file;     // --expect
  bool strict = false;  // --expect-strict
  bool update = false;  // --update-expectations
};

// FILE.new, where --update-expectations writes its proposal.
std::string proposed_expectations_path(const ExpectOptions& o);

// --expect, --expect-strict, --update-expectations on `sub`.
void add_expect_options(CLI::App* sub, ExpectOptions& o);

// --expect FILE as an input, FILE.new (with --update-expectations) as an output.
void add_expect_path_uses(std::vector<cli::PathUse>& uses, const ExpectOptions& o);

std::vector<CaseInfo> case_infos(const std::vector<Case>& cases);

// Reads the file and refuses conflicts over the case set. Throws rcts::Error.
ExpectationFile load_expectations(const ExpectOptions& o, const std::vector<Case>& cases);

// The adapters' marker for a case they cannot express: a file "SKIPPED" (the reason)
// in the directory named after the case id (the safe file-name rule, harness/io/safe_name.hpp).
// At most kMaxMarkerBytes, a plain file.
inline constexpr const char* kSkipMarker = "SKIPPED";
// Their marker for a case whose run raised inside the framework (the message): the
// case's result is an error (kImplementationRaised), which only an "error" entry expects.
inline constexpr const char* kErrorMarker = "ERRORED";
inline constexpr size_t kMaxMarkerBytes = 4096;

// rcts check --expect: a skip result for each selected case that has no result, on each
// backend the dumps name (none: the file's implementation), saying why: the case does
// not run at this world size, is a config_error case (rcts judges its config alone), its
// marker's reason, or no dump below `dirs`; an error for a case with an error marker. A
// marker for a case not in the set, or a second marker for one case, is an rcts::Error.
void add_undumped_cases(std::vector<CaseResult>& results, const std::vector<Case>& cases, const std::string& filter,
                        int world_size, const std::vector<std::filesystem::path>& dirs,
                        const std::string& implementation);

// Whether rcts runs each result's case here: it runs at `world_size`, and (when
// `checking_dumps`) it is no config_error case; `backend_listed(i)` false: not on this
// backend.
std::vector<bool> runs_here(const std::vector<CaseResult>& results, const std::vector<Case>& cases, int world_size,
                            bool checking_dumps, const std::vector<bool>& backend_listed = {});

// Compares (stale entries over the cases `filter` selects; `named_files`: the cases were
// files named one by one, so an entry for none of them is not stale either), prints the
// expectation block to `out`, writes the JSON and JUnit reports
// (paths may be empty; only when `write` — rank 0), proposes an update when asked and
// returns the exit status: 0 when the expectations are met.
int finish_with_expectations(const ExpectOptions& o, const ExpectationFile& f, const std::vector<Case>& cases,
                             const std::vector<CaseResult>& results, const std::vector<bool>& here,
                             const RunHeader& header, const std::string& filter, bool named_files,
                             const std::string& json_out,
                             const std::string& junit_out, bool write, std::ostream& out);

}  // namespace rcts::harness
