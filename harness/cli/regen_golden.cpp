// `rcts regen-golden [paths] [--filter GLOB] [--check]`: rewrites the golden files from
// the current code, all or nothing, and says what changed (run/runner.hpp regen_golden).
#include "harness/cli/commands.hpp"

namespace rcts::harness::cli {

namespace {

class RegenGoldenCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("regen-golden", "rewrite golden files from the current code and say what changed");
    add_common(sub, shared);
    add_backend(sub, shared.backend_name, "cpu");
    sub->add_flag("--check", check_, "write nothing; exit 1 when a golden file would change");
  }
  BackendNeed backend_need() const override { return BackendNeed::one; }
  int run(Session& s) override { return regen_golden(s.cases, s.opt, s.out, check_); }

 private:
  bool check_ = false;
};

}  // namespace

std::unique_ptr<Command> make_regen_golden_command() { return std::make_unique<RegenGoldenCommand>(); }

}  // namespace rcts::harness::cli
