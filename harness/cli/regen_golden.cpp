// `rcts regen-golden [paths] [--filter GLOB] [--check [--mutant NAME]]`: rewrites the
// golden files from the current code, all or nothing, and says what changed
// (run/runner.hpp regen_golden). --mutant (only with --check) shows that a compiled-in
// fault the other checks cannot see is refused by the f64 oracle (design §10).
#include <optional>

#include "harness/cli/commands.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness::cli {

namespace {

class RegenGoldenCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("regen-golden", "rewrite golden files from the current code and say what changed");
    add_common(sub, shared);
    add_backend(sub, shared.backend_name, "cpu");
    sub->add_flag("--check", check_, "write nothing; exit 1 when a golden file would change");
    sub->add_option("--mutant", mutant_,
                    "with --check: switch on a compiled-in fault, to see that regen-golden refuses to bless it");
  }
  BackendNeed backend_need() const override { return BackendNeed::one; }
  std::vector<PathUse> path_uses(const SharedArgs& shared) const override {
    auto u = case_path_uses(shared);
    u.push_back({check_ ? PathUse::Kind::input : PathUse::Kind::output_dir, "--golden-dir",
                 shared.opt.scope.golden_dir.string()});
    return u;
  }

  int run(Session& s) override {
    if (!mutant_.empty() && !check_)
      throw Error("rcts regen-golden: --mutant needs --check (golden files are never written from a mutated run)");
    std::optional<FaultScope> fault;
    if (!mutant_.empty()) fault.emplace(mutant_option(mutant_));
    return regen_golden(s.cases, s.opt, s.out, check_);
  }

 private:
  bool check_ = false;
  std::string mutant_;
};

}  // namespace

std::unique_ptr<Command> make_regen_golden_command() { return std::make_unique<RegenGoldenCommand>(); }

}  // namespace rcts::harness::cli
