// `rcts matrix RESULTS.json...`: the results JSON of several runs (rcts on each backend,
// each framework adapter's `rcts check`, at 1, 2, 4 ranks) as one table, cases down and
// implementations across. A cell is pass, fail (the failing checks), skip (why), xfail,
// error, or what an expectation file made of it (expected-fail, regression, ...); a
// failure's first divergence goes into the HTML cell's title and a numbered detail
// below the table (markdown: a numbered note). The HTML page is self-contained: inline
// CSS, no script, nothing fetched.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rcts::harness {

struct MatrixColumn {
  std::string label;  // "pytorch-reentrant np1"
  std::string file;   // the report it comes from
  std::string backend, git_sha, version;  // version: the implementation's, when an expectation file named it
  int ranks = 1;
};

struct MatrixCell {
  std::string outcome;  // pass, fail, skip, xfail, error
  std::string verdict;  // the expectation verdict, empty without one
  std::vector<std::string> failing;  // failing check kinds, in report order
  std::string reason;                // the full reason
  std::string divergence;            // one line: the first divergence, else the first line of the reason
};

struct Matrix {
  std::vector<MatrixColumn> columns;
  std::vector<std::string> rows;                             // case ids, sorted
  std::vector<std::string> config_only;  // config_error cases no column runs (kConfigErrorSkip everywhere): listed once
  std::map<std::pair<size_t, size_t>, MatrixCell> cells;     // (row, column); absent: not in that report
};

struct MatrixInput {
  std::string label;  // empty: from the report (expectations' implementation, else backend) and " np<W>"
  std::string file;
  nlohmann::json report;
};

// Throws rcts::Error naming the file, the JSON path and the value; also for two columns
// of one label (name them with LABEL=FILE) and a case twice on one backend of a report.
Matrix build_matrix(const std::vector<MatrixInput>& inputs);

// Each argument "FILE" or "LABEL=FILE", read with the strict JSON reader (at least one).
std::vector<MatrixInput> read_matrix_inputs(const std::vector<std::string>& args);
// The file of one argument: FILE, or LABEL=FILE (the label ends at the first '=').
std::string matrix_argument_file(const std::string& arg);

// The cell's one-line text: "pass", "fail: memory", "skip: needs 2 ranks ...",
// "expected-fail: memory", "fail: masks (regression)", ...
std::string cell_text(const MatrixCell& c);
// The cell's class: pass, fail, skip, xfail, error, expected, warn (an unexpected pass).
std::string cell_class(const MatrixCell& c);

std::string matrix_markdown(const Matrix& m);
std::string matrix_html(const Matrix& m, const std::string& title);

}  // namespace rcts::harness
