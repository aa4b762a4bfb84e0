// rcts: the command line of the conformance suite (design §10).
//   rcts run [paths] [--filter GLOB] [--json F] [--junit F] [--dump DIR] [--report DIR] [--mutant NAME]
//   rcts check DIR... [--cases PATHS] [--json F] [--junit F] [--reference-tolerance RTOL]
//   rcts run|check ... --expect FILE [--expect-strict] [--update-expectations]   (docs/expectations.md)
//   rcts matrix RESULTS.json... [--html F] [--markdown F]
//   rcts merge-reports [W=]FILE... [--json F] [--junit F]   (scripts/conformance's summary)
//   rcts list | explain CASE | memory | advise --budget B | regen-golden | mutants | block
// Exit status: 0 when everything asked for passed, 1 on any failure, 2 on bad usage.
//
// This file only dispatches: each subcommand is a file under harness/cli/. Here the
// command line is parsed, MPI started, the ranks agree on the command, the backend the
// command asks for is made, the cases are loaded when it needs them, and errors end up
// as one message and exit status 2 on every rank.
#include <CLI/CLI.hpp>

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <optional>

#include "backends/registry.hpp"
#include "harness/cli/command.hpp"
#include "harness/io/provenance.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/io/version.hpp"
#include "harness/ranks/agreement.hpp"
#include "harness/ranks/rank_watchdog.hpp"
#ifdef RCTS_HAVE_MPI
#include "reference/parallel/mpi_communicator.hpp"
#endif

using namespace rcts;
using namespace rcts::harness;

namespace {

// True when an MPI launcher started this process (then rcts runs as one rank of many).
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

// RCTS_TEST_STOP_AT=<r>:init|finalize: world rank r stops itself (SIGSTOP) just before
// MPI_Init or just before MPI_Finalize, where the other ranks then wait for it (tests).
void stop_here_for_tests(const char* moment) {
  const char* v = std::getenv("RCTS_TEST_STOP_AT");
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!v || !rank) return;
  const std::string want = std::string(rank) + ":" + moment;
  if (want == v) ::raise(SIGSTOP);
}

// Swallows output on ranks other than 0.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

// What outlives rcts_main: MPI and the exchange that gives every rank one exit status.
struct MpiRun {
#ifdef RCTS_HAVE_MPI
  std::optional<MpiSession> mpi;
  std::unique_ptr<Communicator> world;
#endif
  std::optional<RankAgreement> agreement;
  bool failed_here = false;  // this rank's status comes from an error only it may know of
  std::string error;
};

// RCTS_TEST_THROW_ON_RANK=<r> (RCTS_TEST_DEADLOCK_ON_RANK=<r>): world rank r throws
// (waits for a message never sent) in the middle of each case (tests).
int rank_from_env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : -1;
}

void start_mpi([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv, [[maybe_unused]] MpiRun& run,
               [[maybe_unused]] RunOptions& opt) {
#ifdef RCTS_HAVE_MPI
  if (launched_by_mpi()) {
    run.mpi.emplace(&argc, &argv);
    run.world = MpiCommunicator::world();
    opt.scope.world = run.world.get();
    opt.scope.world_size = run.world->size();
    if (opt.scope.world_size > 1) opt.scope.agreement = &run.agreement.emplace(*run.world);
  }
#endif
}

// After a command that reads or writes the golden directory: what killed regen-golden
// runs left there, which `git add -A` would commit.
void warn_of_regen_leftovers(const std::vector<cli::PathUse>& uses, const std::filesystem::path& golden_dir) {
  if (std::none_of(uses.begin(), uses.end(), [](const cli::PathUse& u) { return u.what == "--golden-dir"; })) return;
  for (const auto& left : regen_leftovers(golden_dir))
    std::cerr << "rcts: warning: " << left.string()
              << " is left over from a killed regen-golden (remove it, or run `rcts regen-golden`, which removes it "
                 "once its process is gone); never commit it\n";
}

int run_and_warn(cli::Command& cmd, cli::Session& s, const std::vector<cli::PathUse>& uses) {
  const int status = cmd.run(s);
  if (s.rank0) warn_of_regen_leftovers(uses, s.opt.scope.golden_dir);
  return status;
}

// Agreement at start, the backend, the cases, then the command itself.
int dispatch(cli::Command& cmd, cli::SharedArgs& shared, std::ostream& out, bool rank0) {
  RunOptions& opt = shared.opt;
  if (opt.scope.agreement) agree_on_start(*opt.scope.agreement, cmd.start_record());
  const std::vector<cli::PathUse> uses = cmd.path_uses(shared);
  try {  // every rank resolves the same paths: one message, from rank 0
    cli::refuse_path_clashes(uses);
  } catch (const Error& e) {
    if (opt.scope.agreement) throw AgreedError(e.message());
    throw;
  }
  // An explicit --backend must be able to run; without one, `run` takes every backend
  // a case lists (from the pool) and the other commands the reference.
  std::unique_ptr<Backend> backend;
  BackendPool pool;
  const cli::BackendNeed need = cmd.backend_need();
  if (need == cli::BackendNeed::pool_unless_named && shared.backend_name.empty()) {
    opt.scope.pool = &pool;
  } else if (need != cli::BackendNeed::none) {
    try {
      backend = make_backend(shared.backend_name.empty() ? "cpu" : shared.backend_name);
    } catch (const Error& e) {  // name the option the value came from
      if (shared.backend_name.empty()) throw;
      throw Error("--backend " + shared.backend_name + ": " + e.message());
    }
    opt.scope.backend = backend.get();
  }
  // A backend with device memory moves its bytes over its own world (NCCL), made
  // collectively over the MPI world.
  std::unique_ptr<Communicator> device_world;
  if (backend && opt.scope.world && opt.scope.world->size() > 1) {
    device_world = backend->make_world(*opt.scope.world);
    opt.scope.device_world = device_world.get();
  }
  cli::Session s{opt, pool, backend.get(), out, rank0, {}};
  if (!cmd.needs_cases()) return run_and_warn(cmd, s, uses);
  std::string load_error;
  try {
    const auto paths = cli::case_paths(shared.paths);
    s.cases = load_cases(paths);
    s.named_files = std::any_of(paths.begin(), paths.end(), [](const auto& p) { return !std::filesystem::is_directory(p); });
  } catch (const std::exception& e) {
    if (!opt.scope.agreement) throw;
    load_error = e.what();
  }
  if (opt.scope.agreement) agree_on_load(*opt.scope.agreement, load_error);
  return run_and_warn(cmd, s, uses);
}

int rcts_main(int argc, char** argv, MpiRun& run) {
  CLI::App app{"rcts: deterministic conformance suite for activation recompute and offload"};
  // The commit is read (three git child processes, most of a start's cost) only by what
  // prints it: --version here, reports later. One rank of an MPI job reads it before
  // MPI_Init, since forking after it is unsafe with some transports.
  app.set_version_flag("--version", [] { return std::string(kVersion) + " (" + run_git_sha() + ")"; });
  app.require_subcommand(1);
  cli::SharedArgs shared;
  const auto commands = cli::make_commands();
  for (const auto& c : commands) c->add(app, shared);
  app.footer(cli::limits_help());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {  // --help and --version exit 0; bad usage exits 2 (docs/cli.md)
    return app.exit(e) == 0 ? 0 : 2;
  }
  cli::Command* cmd = nullptr;
  for (const auto& c : commands)
    if (*c->sub) cmd = c.get();

  RunOptions& opt = shared.opt;
  if (launched_by_mpi()) run_git_sha();
  stop_here_for_tests("init");
  start_mpi(argc, argv, run, opt);
  opt.hooks.test_throw_on_rank = rank_from_env("RCTS_TEST_THROW_ON_RANK");
  opt.hooks.test_deadlock_on_rank = rank_from_env("RCTS_TEST_DEADLOCK_ON_RANK");
  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  const bool rank0 = !opt.scope.world || opt.scope.world->rank() == 0;
  std::ostream& out = rank0 ? std::cout : null_stream;
  opt.scope.golden_dir =
      shared.golden_dir.empty() ? cli::default_dir("golden") : std::filesystem::path(shared.golden_dir);

  try {
    return dispatch(*cmd, shared, out, rank0);
  } catch (const AgreedError& e) {  // every rank has it: rank 0 says it once
    if (rank0) std::cerr << "rcts: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    const std::string what = cmd->activity();
    std::cerr << "rcts: out of memory (std::bad_alloc) while " << what << "\n";
    run.failed_here = true;
    run.error = "out of memory while " + what;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rcts: " << (opt.scope.agreement ? "rank " + std::to_string(opt.scope.world->rank()) + ": " : "")
              << e.what() << "\n";
    run.failed_here = true;
    run.error = e.what();
    return 2;
  }
}

// A failed write or flush of stdout (a full disk, a closed file) is an error for every
// command: output nobody received is no pass. Status 2, with the OS's reason.
int check_stdout(int status, MpiRun& run, const VisibleControlsBuffer& visible) {
  std::cout.flush();
  const bool bad = std::cout.bad() || std::fflush(stdout) != 0 || std::ferror(stdout);
  int err = visible.first_error();  // the first write that failed says why
  if (bad && err == 0 && std::fflush(stdout) != 0) err = errno;
  if (!bad) return status;
  const std::string why = "cannot write standard output" + (err ? ": " + std::string(std::strerror(err)) : "");
  std::cerr << "rcts: " << why << "\n";
  run.failed_here = true;
  if (run.error.empty()) run.error = why;
  return std::max(status, 2);
}

}  // namespace

int main(int argc, char** argv) {
  // Before MPI_Init and until after MPI_Finalize (MpiRun's end): a stopped rank of this
  // job ends it at any moment of its life (rank_watchdog.hpp).
  std::optional<RankWatchdog> watchdog;
  if (launched_by_mpi()) watchdog.emplace();
  // Reasons and file names quote outside text: none of it may drive the terminal.
  VisibleControlsBuffer visible(std::cout.rdbuf());
  std::streambuf* const stdout_buffer = std::cout.rdbuf(&visible);
  MpiRun run;
  int status = check_stdout(rcts_main(argc, argv, run), run, visible);
  std::cout.rdbuf(stdout_buffer);
  if (run.agreement) status = agree_on_exit(*run.agreement, status, run.failed_here, run.error);
  stop_here_for_tests("finalize");  // MpiRun's end finalises MPI
  return status;
}
