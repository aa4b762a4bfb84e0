// `rcts merge-reports [W=]FILE... [--skipped W=REASON] [--missing W=REASON] [--json F] [--junit F]`:
// prints the merged summary of `rcts run --json` reports at several world sizes
// (reports/merge_reports.hpp) and writes the merged JSON and JUnit. "W=FILE" also checks
// that FILE is a run at W ranks. Exit status: 0 when every world size that should run
// passed, 1 on a failure or a missing world size; bad input is an rcts::Error.
#include <optional>

#include "harness/cli/commands.hpp"
#include "harness/expectations/report_consistency.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/reports/merge_reports.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness::cli {

namespace {

// "W=rest" -> (W, rest) when the text starts with a world size and '='.
std::optional<std::pair<int, std::string>> split_world_size(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq > 6) return std::nullopt;
  for (size_t i = 0; i < eq; ++i)
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  const int w = std::stoi(text.substr(0, eq));
  if (w < 1) return std::nullopt;
  return std::pair{w, text.substr(eq + 1)};
}

WorldSizeResults not_run(const std::string& option, const std::string& text, WorldSizeResults::Status status) {
  const auto split = split_world_size(text);
  if (!split || split->second.empty())
    throw Error(option + " '" + text + "': expected W=REASON (a world size, '=', why it has no report)");
  WorldSizeResults w;
  w.ranks = split->first;
  w.status = status;
  w.reason = split->second;
  return w;
}

class MergeReportsCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs&) override {
    sub = app.add_subcommand("merge-reports",
                             "merge `rcts run --json` reports of several world sizes: one summary, JSON and JUnit");
    sub->add_option("reports", reports_, "report files, each FILE or W=FILE (W: the world size it must have)");
    sub->add_option("--skipped", skipped_, "W=REASON: world size W could not run here (not a failure)");
    sub->add_option("--missing", missing_, "W=REASON: world size W wrote no report (a failure)");
    sub->add_option("--json", json_out_, "write the merged JSON (docs/json-report.md)");
    sub->add_option("--junit", junit_out_, "write the merged JUnit XML");
  }
  bool needs_cases() const override { return false; }
  std::string activity() const override { return "merging reports"; }

  std::vector<PathUse> path_uses(const SharedArgs&) const override {
    std::vector<PathUse> u;
    for (const auto& r : reports_) {
      const auto split = split_world_size(r);
      u.push_back({PathUse::Kind::input, "report", split ? split->second : r});
    }
    u.push_back({PathUse::Kind::output, "--json", json_out_});
    u.push_back({PathUse::Kind::output, "--junit", junit_out_});
    return u;
  }

  int run(Session& s) override {
    std::vector<WorldSizeResults> sizes;
    for (const auto& r : reports_) {
      const auto split = split_world_size(r);
      sizes.push_back(split ? read_results_file(split->second, split->first) : read_results_file(r, std::nullopt));
    }
    for (const auto& t : skipped_) sizes.push_back(not_run("--skipped", t, WorldSizeResults::Status::skipped));
    for (const auto& t : missing_) sizes.push_back(not_run("--missing", t, WorldSizeResults::Status::missing));
    if (sizes.empty()) throw Error("rcts merge-reports: no report given (pass the files of `rcts run --json`)");
    std::vector<std::pair<std::string, const nlohmann::json*>> docs;
    for (const auto& w : sizes)
      if (w.status == WorldSizeResults::Status::run) {
        check_results_consistency(w.document, w.file);
        docs.emplace_back(w.file, &w.document);
      }
    check_same_rcts(docs);
    sizes = order_world_sizes(std::move(sizes));
    s.out << merged_summary(sizes);
    if (!json_out_.empty()) write_file_atomic(json_out_, json_text(merged_json(sizes), 2) + "\n");
    if (!junit_out_.empty()) write_file_atomic(junit_out_, merged_junit(sizes));
    return merged_exit_status(sizes);
  }

 private:
  std::vector<std::string> reports_;           // "FILE" or "W=FILE"
  std::vector<std::string> skipped_, missing_;  // "W=REASON"
  std::string json_out_, junit_out_;
};

}  // namespace

std::unique_ptr<Command> make_merge_reports_command() { return std::make_unique<MergeReportsCommand>(); }

}  // namespace rcts::harness::cli
