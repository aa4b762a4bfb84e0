// The case runner: loads cases, runs the baseline and every variant of a case,
// applies its checks, and reports (progress line per case, summary table, JSON,
// JUnit). Also `--dump`; the mutant sweep (mutants.cpp) and golden regeneration
// (regen.cpp) are declared here.
#pragma once
#include <filesystem>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/cases/case.hpp"
#include "harness/cases/case_config.hpp"
#include "harness/golden/golden.hpp"
#include "harness/checks/reference_compare.hpp"
#include "harness/reports/report.hpp"
#include "reference/backend/backend.hpp"
#include "reference/memory_model/run_estimate.hpp"
#include "reference/parallel/communicator.hpp"

namespace rcts::harness {

// Backends by name for a run over the backends each case lists: made on first use and
// kept; one that cannot run here is remembered with the reason.
class BackendPool {
 public:
  // The backend, or null with `why` set.
  Backend* get(const std::string& name, std::string& why);
  // Its device world over `host_world` (made once, collectively), or null when the host
  // world moves its bytes.
  Communicator* device_world(const std::string& name, Communicator& host_world);

 private:
  std::map<std::string, std::unique_ptr<Backend>> made_;
  std::map<std::string, std::unique_ptr<Communicator>> worlds_;
  std::map<std::string, std::string> refused_;
};

// Where a case's runs come from when they are not executed here: `rcts check` reads
// them from dumps (harness/run/dump_check.hpp). `run` is "baseline", a variant's name,
// or the label a check passes to CheckContext::rerun; `cfg` and `coords` are what
// rcts resolves for that run on this rank, which the dumped run must match.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual RunRecord record(const Case& c, const std::string& run, const Config& cfg, const RankCoords& coords) const = 0;
};

class RankAgreement;
class RunReport;
class ProgressMeter;

// What runs, where and against what: the cases, the backends, the ranks, the limits.
struct RunScope {
  // The backend the cases run on. A case runs on it when its `backends` list names it or
  // the backend whose golden files it shares. Null in run_cases with `pool` set: then
  // each case runs once on every backend it lists, and one that cannot run here
  // (not built, no device) gives a skip with the reason.
  Backend* backend = nullptr;
  BackendPool* pool = nullptr;
  int world_size = 1;
  Communicator* world = nullptr;  // multi-rank runs (mpirun): the world communicator (host bytes)
  // The world the process groups are built on when the backend keeps tensors in device
  // memory (NCCL over `world`, Backend::make_world); null: `world` itself.
  Communicator* device_world = nullptr;
  // Multi-rank runs: the exchanges that keep the ranks in step (agreement.hpp).
  RankAgreement* agreement = nullptr;
  // Runs come from here instead of execute() (`rcts check`); no backend is needed then.
  const RecordSource* records = nullptr;
  // With `records`: also run rcts's reference of every run on `backend` and compare
  // within this tolerance (`rcts check --reference-tolerance`, reference_compare.hpp).
  std::optional<ReferenceTolerance> reference;
  std::string filter;        // glob over case ids; empty = all
  bool golden_only = false;  // run the baseline and its golden check only
  RunLimits limits;          // every config's estimate is checked before it runs
  std::filesystem::path golden_dir = "golden";  // what the golden check compares with
};

// Where results go besides the returned CaseResults. All optional.
struct RunSinks {
  std::optional<std::filesystem::path> dump_dir;  // write every run as a format-1 dump (dump_v1.hpp)
  std::string* dump_failure = nullptr;            // gets the first error writing a dump: it is not committed
  ProgressMeter* meter = nullptr;  // the case counter on stderr (progress.hpp); rank 0 only
  RunReport* report = nullptr;     // --report: every run's pictures, a page per case (run_report.hpp)
  // regen-golden: every check runs, but the baseline's golden digests are stored here
  // (by case id) instead of being compared with the golden file.
  std::map<std::string, Golden>* collect_goldens = nullptr;
};

// Faults the tests inject; off in every ordinary run.
struct RunTestHooks {
  // RCTS_TEST_THROW_ON_RANK: this world rank throws after its baseline run, while the
  // other ranks go on into the variants' collectives.
  int test_throw_on_rank = -1;
  // RCTS_TEST_DEADLOCK_ON_RANK: this world rank then waits for a message no rank sends
  // (a case deadlocked in its own communication), while the others go on.
  int test_deadlock_on_rank = -1;
};

struct RunOptions {
  RunScope scope;
  RunSinks sinks;
  RunTestHooks hooks;
};

CaseResult run_case(const Case& c, const RunOptions& options);

// Runs the cases matching the filter, printing a progress line per case to `progress`.
// No case matching (an empty selection checks nothing) is an rcts::Error.
std::vector<CaseResult> run_cases(const std::vector<Case>& cases, const RunOptions& options, std::ostream* progress);

RunHeader make_header(const RunOptions& options);

// Mutants: every compiled-in fault against the case set. A mutant is killed when
// at least one case that passes cleanly fails (or errors) with the fault on. No case
// matching the filter, or an unknown name in `only`, is an rcts::Error.
struct MutantResult {
  std::string name;
  std::string description;
  std::vector<std::string> killers;  // case ids
  double seconds = 0;
};
std::vector<MutantResult> run_mutants(const std::vector<Case>& cases, const RunOptions& options, bool all_killers,
                                      const std::vector<std::string>& only, std::ostream& out);

// Rewrites the golden files of the selected cases that expect one, all or nothing: it
// runs every such case (all its checks) first and writes only when every one passes and
// every file could be prepared, then prints what changed, one line per file
// (golden_review.hpp). Returns the exit status. `check_only` (--check) writes nothing
// and returns 1 when a golden file would change. Throws rcts::Error when no case
// matches the selection or a write fails.
int regen_golden(const std::vector<Case>& cases, const RunOptions& options, std::ostream& out, bool check_only = false);
// What killed regen-golden runs left in `golden_dir` (hidden ".<set>.regen-..." copies of
// a golden set, which `git add -A` would commit). regen-golden removes those whose
// process is gone before it runs anything, whether or not it then writes; main.cpp
// warns about every one it sees.
std::vector<std::filesystem::path> regen_leftovers(const std::filesystem::path& golden_dir);

}  // namespace rcts::harness
