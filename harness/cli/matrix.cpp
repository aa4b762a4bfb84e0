// `rcts matrix RESULTS.json... [--html F] [--markdown F] [--title T]`: the results JSONs
// of several implementations (each FILE or LABEL=FILE) as one self-contained HTML page
// and a markdown table (harness/matrix/matrix.hpp, docs/expectations.md); the markdown
// goes to stdout when neither file is asked for. Bad input, a report that contradicts
// itself and reports of different rcts builds or seeds are errors naming the file.
#include <iostream>

#include "harness/cli/commands.hpp"
#include "harness/expectations/report_consistency.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/matrix/matrix.hpp"

namespace rcts::harness::cli {

namespace {

class MatrixCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs&) override {
    sub = app.add_subcommand("matrix", "render results JSONs of several implementations as one HTML page and markdown table");
    sub->add_option("reports", reports_, "results JSONs (rcts run/check --json), each FILE or LABEL=FILE")->required();
    sub->add_option("--html", html_, "write the self-contained HTML page here");
    sub->add_option("--markdown", markdown_, "write the markdown table here (default without --html: stdout)");
    sub->add_option("--title", title_, "the page's title")->capture_default_str();
  }
  bool needs_cases() const override { return false; }
  std::string activity() const override { return "rendering the results matrix"; }

  std::vector<PathUse> path_uses(const SharedArgs&) const override {
    std::vector<PathUse> u;
    for (const auto& r : reports_) u.push_back({PathUse::Kind::input, "results JSON", matrix_argument_file(r)});
    u.push_back({PathUse::Kind::output, "--html", html_});
    u.push_back({PathUse::Kind::output, "--markdown", markdown_});
    return u;
  }

  int run(Session&) override {
    const auto inputs = read_matrix_inputs(reports_);
    std::vector<std::pair<std::string, const nlohmann::json*>> docs;
    for (const auto& in : inputs) {
      check_results_consistency(in.report, in.file);
      docs.emplace_back(in.file, &in.report);
    }
    check_same_rcts(docs);
    const Matrix m = build_matrix(inputs);
    if (!html_.empty()) write_file_atomic(html_, matrix_html(m, title_));
    if (!markdown_.empty()) write_file_atomic(markdown_, matrix_markdown(m));
    if (html_.empty() && markdown_.empty()) std::cout << matrix_markdown(m);
    return 0;
  }

 private:
  std::vector<std::string> reports_;
  std::string html_, markdown_, title_ = "rcts results matrix";
};

}  // namespace

std::unique_ptr<Command> make_matrix_command() { return std::make_unique<MatrixCommand>(); }

}  // namespace rcts::harness::cli
