// `rcts check DIR... [--cases PATHS] [--json F] [--junit F] [--reference-tolerance RTOL]`:
// the cases' checks over dumps of any implementation (docs/dump-format.md).
#include <iostream>
#include <optional>

#include "harness/cli/commands.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/cli/expect.hpp"
#include "harness/reports/report.hpp"
#include "harness/run/dump_check.hpp"

namespace rcts::harness::cli {

namespace {

class CheckCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("check", "run cases' checks over dumps of any implementation (docs/dump-format.md)");
    sub->add_option("dirs", dirs_, "dump directories: every dump.json below them")->required();
    sub->add_option("--cases", shared.paths, "case files or directories the dumps' cases are in (default: cases/)");
    sub->add_option("--filter", shared.opt.scope.filter, "glob over case ids");
    sub->add_option("--golden-dir", shared.golden_dir, "golden directory (default: golden/)");
    sub->add_option("--json", json_out_, "write results as JSON");
    sub->add_option("--junit", junit_out_, "write results as JUnit XML");
    reference_opt_ = sub->add_option(
        "--reference-tolerance", rtol_,
        "also run rcts's reference of every dumped run and compare losses, outputs and gradients: fail a tensor when "
        "max abs error > ATOL + RTOL * max |reference|")
        ->check(finite_number(0, true));
    sub->add_option("--reference-atol", atol_, "absolute part of the reference tolerance (default 0)")
        ->needs(reference_opt_)->check(finite_number(0, true));
    add_backend(sub, shared.backend_name, "cpu; the reference's backend with --reference-tolerance");
    add_limits(sub, shared.opt.scope.limits);
    add_expect_options(sub, expect_);
  }
  BackendNeed backend_need() const override { return *reference_opt_ ? BackendNeed::one : BackendNeed::none; }

  std::vector<PathUse> path_uses(const SharedArgs& shared) const override {
    auto u = case_path_uses(shared, "--cases");
    for (const auto& d : dirs_) u.push_back({PathUse::Kind::input, "dump directory", d});
    u.push_back({PathUse::Kind::input, "--golden-dir", shared.opt.scope.golden_dir.string()});
    add_expect_path_uses(u, expect_);
    u.push_back({PathUse::Kind::output, "--json", json_out_});
    u.push_back({PathUse::Kind::output, "--junit", junit_out_});
    return u;
  }

  int run(Session& s) override {
    RunOptions& opt = s.opt;
    if (*reference_opt_) opt.scope.reference = ReferenceTolerance{rtol_, atol_};
    std::optional<ExpectationFile> expectations;
    if (!expect_.file.empty()) expectations = load_expectations(expect_, s.cases);
    const std::vector<std::filesystem::path> dirs(dirs_.begin(), dirs_.end());
    // With --expect every selected case gets a result: a directory may hold only skips.
    const auto groups = index_dumps(dirs, expectations.has_value());
    auto header = make_header(opt);
    header.backend = "dumps";
    s.out << "rcts " << header.version << " (" << header.git_sha << ")  checking dumps, " << header.ranks
          << " rank(s), " << groups.size() << " dumped case(s)\n";
    auto results = check_dump_groups(s.cases, groups, opt, s.rank0 ? &std::cout : nullptr);
    if (expectations)
      add_undumped_cases(results, s.cases, opt.scope.filter, opt.scope.world_size, dirs, expectations->implementation);
    s.out << "\n" << summary_table(header, results);
    if (expectations)
      return finish_with_expectations(expect_, *expectations, s.cases, results,
                                      runs_here(results, s.cases, opt.scope.world_size, true), header,
                                      opt.scope.filter, s.named_files, json_out_, junit_out_, s.rank0, s.out);
    if (s.rank0) {
      write_file(json_out_, json_text(results_json(header, results), 2) + "\n");
      write_file(junit_out_, junit_xml(header, results));
    }
    const auto t = tally(results);
    return t.failed + t.errors > 0 || results.empty() ? 1 : 0;
  }

 private:
  std::vector<std::string> dirs_;
  std::string json_out_, junit_out_;
  double rtol_ = 0, atol_ = 0;
  CLI::Option* reference_opt_ = nullptr;
  ExpectOptions expect_;
};

}  // namespace

std::unique_ptr<Command> make_check_command() { return std::make_unique<CheckCommand>(); }

}  // namespace rcts::harness::cli
