// `rcts list [paths] [--filter GLOB] [--tsv | --json]`: the cases, as text, as
// tab-separated lines for scripts (cases/case_listing.hpp) or as JSON.
#include <iomanip>
#include <iostream>

#include "harness/cases/case_listing.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/json_outputs.hpp"

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
    const std::string& filter = s.opt.scope.filter;
    if (tsv_) {
      for (const auto& c : s.cases)
        if (filter.empty() || glob_match(filter, c.id)) std::cout << case_tsv_line(c) << "\n";
      return 0;
    }
    if (json_) {
      std::cout << list_json(s.cases, filter).dump(2) << "\n";
      return 0;
    }
    for (const auto& c : s.cases)
      if (filter.empty() || glob_match(filter, c.id)) std::cout << std::left << std::setw(44) << c.id << c.description << "\n";
    return 0;
  }

 private:
  bool tsv_ = false, json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_list_command() { return std::make_unique<ListCommand>(); }

}  // namespace rcts::harness::cli
