// `rcts checks`: the check kinds a case's "expect" may name, where they may appear and
// what each asserts (from the registry, checks/check_kinds.hpp).
#include <iomanip>
#include <iostream>

#include "harness/checks/check_kinds.hpp"
#include "harness/cli/commands.hpp"

namespace rcts::harness::cli {

namespace {

class ChecksCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs&) override {
    sub = app.add_subcommand("checks", "list the check kinds a case's \"expect\" may name");
  }
  bool needs_cases() const override { return false; }
  int run(Session&) override {
    for (const auto& k : check_kinds())
      std::cout << std::left << std::setw(20) << k.name << std::setw(12)
                << (k.case_level_only() ? "case" : "case, variant") << k.summary << "\n";
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_checks_command() { return std::make_unique<ChecksCommand>(); }

}  // namespace rcts::harness::cli
