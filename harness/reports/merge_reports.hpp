// `rcts merge-reports`: the results of one case set at several world sizes (each an
// `rcts run --json` document) as one: a summary line per world size and a total, every
// failing case with its reason (first divergence first), one JSON document (schema
// "rcts-conformance", docs/json-report.md) and one JUnit file. scripts/conformance runs
// every world size and merges them with it. A world size may also be recorded as
// skipped (it could not run here, e.g. no MPI: not a failure) or missing (its run
// wrote no report: a failure).
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/reports/report.hpp"

namespace rcts::harness {

inline constexpr const char* kMergedSchema = "rcts-conformance";
inline constexpr int kMergedSchemaVersion = 1;

struct WorldSizeResults {
  enum class Status { run, skipped, missing };
  int ranks = 1;
  Status status = Status::run;
  std::string reason;         // skipped, missing: why
  std::string file;           // run: the report it was read from
  nlohmann::json document;    // run: the rcts-results document as written
  RunHeader header;           // run: read back from `document`
  std::vector<CaseResult> cases;
};

// Reads back what results_json() wrote (header, cases with their backends, and each
// case's seconds from "timing"). rcts::Error naming `source` and the JSON path.
WorldSizeResults results_from_json(const nlohmann::json& document, const std::string& source);
// Reads an `rcts run --json` file; with `expect_ranks`, its world size must be that one
// (an rcts built without MPI runs each mpirun process as a one-rank run).
WorldSizeResults read_results_file(const std::filesystem::path& file, std::optional<int> expect_ranks);

// In world-size order; two entries of one world size are an rcts::Error naming both.
std::vector<WorldSizeResults> order_world_sizes(std::vector<WorldSizeResults> sizes);

// The table (one row per world size, a total), the failing cases with every line of
// their reasons, and the last line "N passed, N failed, N skipped at world sizes ...".
std::string merged_summary(const std::vector<WorldSizeResults>& sizes);
// {"schema": "rcts-conformance", "summary", "world_sizes": [...], "runs": [the documents]}
nlohmann::json merged_json(const std::vector<WorldSizeResults>& sizes);
// One <testsuites> holding each run's <testsuite> (names "rcts.np<W>"), and for a
// skipped or missing world size a suite with one skipped or error test case saying why.
std::string merged_junit(const std::vector<WorldSizeResults>& sizes);
// 0 when every world size that should run ran, at least one case ran and none failed
// or erred; 1 otherwise.
int merged_exit_status(const std::vector<WorldSizeResults>& sizes);

}  // namespace rcts::harness
