// `rcts run [paths] [--filter GLOB] [--json F] [--junit F] [--dump DIR] [--report DIR] [--mutant NAME]`:
// runs the cases and checks them; exit 1 when a case fails or errors.
#include <optional>

#include <algorithm>

#include "harness/cases/case_config.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/cli/commands.hpp"
#include "harness/cli/expect.hpp"
#include "harness/reports/progress.hpp"
#include "harness/reports/report.hpp"
#include "harness/reports/run_report.hpp"
#include "harness/run/dump_staging.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness::cli {

namespace {

class RunCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    shared_ = &shared;
    sub = app.add_subcommand("run", "run cases and check them");
    add_common(sub, shared);
    add_backend(sub, shared.backend_name,
                "every backend a case lists; one that cannot run here gives skips with the reason");
    add_limits(sub, shared.opt.scope.limits);
    sub->add_option("--json", json_out_, "write results as JSON");
    sub->add_option("--junit", junit_out_, "write results as JUnit XML");
    auto* dump_opt = sub->add_option("--dump", dump_dir_, "write every run as a format-1 dump (docs/dump-format.md) under DIR");
    sub->add_flag("--dump-replace", dump_replace_, "with --dump: replace a non-empty DIR whole")->needs(dump_opt);
    auto* report_opt = sub->add_option("--report", report_dir_,
                                       "write per case an HTML page of memory plots and a Chrome trace, and index.html");
    sub->add_flag("--report-replace", report_replace_, "with --report: replace a non-empty DIR whole")->needs(report_opt);
    sub->add_option("--mutant", mutant_, "switch on a compiled-in fault (see `rcts mutants --list`)");
    sub->add_flag("--golden-only", shared.opt.scope.golden_only,
                  "run each case's baseline and check its golden digests only");
    add_expect_options(sub, expect_);
    sub->add_flag("--progress", progress_,
                  "write a case counter with the elapsed and the estimated remaining time to stderr (default: when "
                  "stdout is not a terminal and stderr is)");
  }
  BackendNeed backend_need() const override { return BackendNeed::pool_unless_named; }

  std::vector<PathUse> path_uses(const SharedArgs& shared) const override {
    auto u = case_path_uses(shared);
    u.push_back({PathUse::Kind::input, "--golden-dir", shared.opt.scope.golden_dir.string()});
    add_expect_path_uses(u, expect_);
    u.push_back({PathUse::Kind::output, "--json", json_out_});
    u.push_back({PathUse::Kind::output, "--junit", junit_out_});
    u.push_back({PathUse::Kind::output_dir, "--dump", dump_dir_});
    u.push_back({PathUse::Kind::output_dir, "--report", report_dir_});
    return u;
  }

  int run(Session& s) override {
    RunOptions& opt = s.opt;
    std::optional<ExpectationFile> expectations;  // refused before anything runs
    if (!expect_.file.empty()) expectations = load_expectations(expect_, s.cases);
    std::optional<FaultScope> fault;
    if (!mutant_.empty()) fault.emplace(mutant_option(mutant_));
    std::optional<DumpStaging> dump;
    std::string dump_failure;
    if (!dump_dir_.empty()) {
      opt.sinks.dump_dir = dump.emplace(dump_dir_, dump_replace_, opt.scope.agreement).staging();
      opt.sinks.dump_failure = &dump_failure;
    }
    std::optional<DumpStaging> report_staging;
    std::optional<RunReport> report;
    if (!report_dir_.empty())
      opt.sinks.report =
          &report.emplace(report_staging.emplace(report_dir_, report_replace_, opt.scope.agreement, "--report").staging(),
                                   opt.scope.agreement);
    const size_t selected = select_cases(s.cases, opt.scope.filter).size();
    const auto header = make_header(opt);
    s.out << "rcts " << header.version << " (" << header.git_sha << ")  backend " << header.backend << ", "
          << header.ranks << " rank(s), " << selected << " case(s)" << (mutant_.empty() ? "" : ", mutant " + mutant_)
          << "\n";
    std::optional<ProgressMeter> meter;
    if (s.rank0 && (progress_ || progress_wanted_by_default()))
      opt.sinks.meter = &meter.emplace(std::cerr, "np" + std::to_string(header.ranks), stderr_is_terminal());
    const auto results = run_cases(s.cases, opt, s.rank0 ? &std::cout : nullptr);
    if (dump) dump->commit(dump_failure);
    if (report) {
      report->write_index(header, results);
      report_staging->commit();
    }
    s.out << "\n" << summary_table(header, results);
    if (expectations) {
      std::vector<bool> listed;  // with --backend, a case that does not list it is not judged
      if (opt.scope.backend)
        for (const auto& r : results) {
          const auto c = std::find_if(s.cases.begin(), s.cases.end(), [&](const Case& x) { return x.id == r.id; });
          listed.push_back(c != s.cases.end() && case_runs_on(*c, *opt.scope.backend));
        }
      return finish_with_expectations(expect_, *expectations, s.cases, results,
                                      runs_here(results, s.cases, opt.scope.world_size, false, listed), header,
                                      opt.scope.filter, s.named_files, json_out_, junit_out_, s.rank0, s.out);
    }
    if (s.rank0) {
      write_file(json_out_, json_text(results_json(header, results), 2) + "\n");
      write_file(junit_out_, junit_xml(header, results));
    }
    const auto t = tally(results);
    return t.failed + t.errors > 0 ? 1 : 0;
  }

 private:
  SharedArgs* shared_ = nullptr;
  std::string json_out_, junit_out_, dump_dir_, report_dir_, mutant_;
  bool dump_replace_ = false, report_replace_ = false, progress_ = false;
  ExpectOptions expect_;
};

}  // namespace

std::unique_ptr<Command> make_run_command() { return std::make_unique<RunCommand>(); }

}  // namespace rcts::harness::cli
