// `rcts explain CASE [--cases PATHS] [--json]`: a case's plan (configs, chunks,
// recomputed modules, bytes, seeds), found by id or file (explain_view.hpp).
#include <iostream>

#include "harness/cli/commands.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/cli/explain_view.hpp"

namespace rcts::harness::cli {

namespace {

class ExplainCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("explain", "print a case's plan: configs, chunks, recomputed modules, bytes, seeds");
    sub->add_option("case", case_id_, "case id or case file")->required();
    sub->add_option("--cases", shared.paths, "where to look for the case (default: cases/)");
    sub->add_flag("--json", json_, "print JSON (docs/json-report.md)");
    add_backend(sub, shared.backend_name, "cpu");
    add_limits(sub, shared.opt.scope.limits);
  }
  BackendNeed backend_need() const override { return BackendNeed::one; }
  std::string activity() const override { return "explaining case " + case_id_; }

  int run(Session& s) override {
    for (const auto& c : s.cases)
      if (c.id == case_id_ || c.file == std::filesystem::path(case_id_)) return print(c, s);
    if (std::filesystem::exists(case_id_)) return print(load_case(case_id_), s);
    std::cerr << "rcts explain: no case '" << case_id_ << "' (try `rcts list`)\n";
    return 2;
  }

 private:
  int print(const Case& c, Session& s) const {
    const CaseExplanation x = explain(c, *s.backend, s.opt.scope.limits);
    std::cout << (json_ ? json_text(explanation_json(x), 2) + "\n" : explanation_text(x));
    return 0;
  }
  std::string case_id_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_explain_command() { return std::make_unique<ExplainCommand>(); }

}  // namespace rcts::harness::cli
