// `rcts mutants [paths] [--only NAME...] [--all-killers] [--list]`: every compiled-in
// fault against the cases; exit 1 when one survives (run/runner.hpp run_mutants).
#include <iomanip>
#include <iostream>

#include "harness/cli/commands.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness::cli {

namespace {

class MutantsCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("mutants", "run every mutant against the cases; fail if one survives");
    add_common(sub, shared);
    add_backend(sub, shared.backend_name, "cpu");
    add_limits(sub, shared.opt.scope.limits);
    sub->add_flag("--all-killers", all_killers_, "run every case per mutant (default: stop at the first killer)");
    sub->add_option("--only", only_, "mutant names to run");
    sub->add_flag("--list", list_, "list the mutants and exit");
  }
  BackendNeed backend_need() const override { return BackendNeed::one; }
  bool needs_cases() const override { return !list_; }

  int run(Session& s) override {
    if (list_) {
      for (const auto& f : all_faults()) std::cout << std::left << std::setw(32) << f.name << f.description << "\n";
      return 0;
    }
    const auto results = run_mutants(s.cases, s.opt, all_killers_, only_, s.out);
    int killed = 0;
    for (const auto& m : results) killed += m.killers.empty() ? 0 : 1;
    s.out << "mutation score: " << killed << "/" << results.size() << " killed\n";
    return killed == static_cast<int>(results.size()) && !results.empty() ? 0 : 1;
  }

 private:
  bool all_killers_ = false, list_ = false;
  std::vector<std::string> only_;
};

}  // namespace

std::unique_ptr<Command> make_mutants_command() { return std::make_unique<MutantsCommand>(); }

}  // namespace rcts::harness::cli
