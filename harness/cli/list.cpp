// `rcts list [paths] [--filter GLOB] [--tsv | --json]`: the cases, as text, as
// tab-separated lines for scripts or as JSON (list_view.hpp).
#include <iostream>

#include "harness/cli/commands.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/cli/list_view.hpp"

namespace rcts::harness::cli {

namespace {

class ListCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("list", "list cases");
    add_common(sub, shared);
    sub->add_flag("--tsv", tsv_, "one tab-separated line per case for scripts: id, file, world sizes, backends, golden (1/0)");
    sub->add_flag("--json", json_, "print JSON (docs/json-report.md)");
  }

  int run(Session& s) override {
    const CaseList l = list_cases(s.cases, s.opt.scope.filter);
    std::cout << (tsv_ ? list_tsv(l) : json_ ? json_text(list_json(l), 2) + "\n" : list_text(l));
    return 0;
  }

 private:
  bool tsv_ = false, json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_list_command() { return std::make_unique<ListCommand>(); }

}  // namespace rcts::harness::cli
