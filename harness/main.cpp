// rcts: the command line of the conformance suite (design §10).
//   rcts run [paths] [--filter GLOB] [--json F] [--junit F] [--dump DIR] [--mutant NAME]
//   rcts check DIR... [--cases PATHS] [--json F] [--junit F] [--reference-tolerance RTOL]
//   rcts list | explain CASE | memory | regen-golden | mutants | block
// Exit status: 0 when everything asked for passed, 1 on any failure, 2 on bad usage.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <sstream>

#include "backends/registry.hpp"
#include "harness/lib/agreement.hpp"
#include "harness/lib/atomic_file.hpp"
#include "harness/lib/check_kinds.hpp"
#include "harness/lib/dump_check.hpp"
#include "harness/lib/dump_staging.hpp"
#include "harness/lib/runner.hpp"
#include "harness/lib/strict_json.hpp"
#include "harness/lib/version.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/limits.hpp"
#include "reference/config/validate.hpp"
#include "reference/core/faults.hpp"
#include "reference/memory_model/report.hpp"
#ifdef RCTS_HAVE_MPI
#include "reference/parallel/mpi_communicator.hpp"
#endif

namespace fs = std::filesystem;
using namespace rcts;
using namespace rcts::harness;

namespace {

// True when an MPI launcher started this process (then rcts runs as one rank of many).
[[maybe_unused]] bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

// Swallows output on ranks other than 0.
struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};

std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

fs::path default_dir(const char* name) {
  if (fs::exists(name)) return name;
  return fs::path(RCTS_SOURCE_DIR) / name;
}

std::vector<fs::path> case_paths(const std::vector<std::string>& given) {
  if (given.empty()) return {default_dir("cases")};
  return {given.begin(), given.end()};
}

void write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  write_file_atomic(path, text);
}

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

// RCTS_TEST_THROW_ON_RANK=<r>: world rank r throws in the middle of each case (tests).
int throw_on_rank_from_env() {
  const char* v = std::getenv("RCTS_TEST_THROW_ON_RANK");
  return v && *v ? std::atoi(v) : -1;
}

Config read_config_file(const std::string& path) {
  if (path.empty()) return Config{};
  return config_from_json(read_json_file(path, "config file"), path);
}

// `rcts block`: the dense block on one config, with a short human summary.
int block_command(const std::string& config_file, Backend& backend, const RunLimits& limits) {
  Config cfg = read_config_file(config_file);
  if (config_file.empty()) {
    cfg.model.num_layers = 4;
    cfg.model.hidden_size = 64;
    cfg.model.num_attention_heads = 4;
    cfg.model.seq_length = 64;
    cfg.model.micro_batch_size = 2;
    cfg.model.ffn_hidden_size = 256;
    cfg.run.micro_batches = 2;
    cfg.recompute.recompute_granularity.reset();
  }
  validate_or_throw(cfg, config_file.empty() ? "default config" : config_file);
  check_supported_or_throw(cfg);
  check_run_limits(cfg, config_file.empty() ? "default config" : config_file, limits);
  const auto t0 = std::chrono::steady_clock::now();
  const RunRecord r = execute(cfg, backend);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& m = cfg.model;
  std::cout << "rcts " << kVersion << " (" << kGitSha << ")  dense block, backend " << backend.name() << " ("
            << backend.description() << ")\n"
            << "  L=" << m.num_layers << " h=" << m.hidden_size << " a=" << m.num_attention_heads << " s=" << m.seq_length
            << " b=" << m.micro_batch_size << " ffn=" << m.ffn_hidden_size << " " << m.activation << " "
            << dtype_name(m.activation_dtype) << " dropout " << m.attention_dropout << "/" << m.hidden_dropout
            << "  recompute " << cfg.recompute.recompute_granularity.value_or("none") << "  plan "
            << plan_str(r.plan) << "\n\n";
  std::cout << std::setprecision(9);
  for (size_t i = 0; i < r.losses.size(); ++i) std::cout << "  loss[micro-batch " << i << "] = " << r.losses[i] << "\n";
  std::cout << "\n  gradient norms (last step, accumulated):\n";
  for (const auto& g : r.grads) {
    auto v = to_vector<double>(g.tensor);
    double s = 0;
    for (double x : v) s += x * x;
    std::cout << "    " << std::left << std::setw(44) << g.name << std::right << std::setw(16) << std::sqrt(s) << "\n";
  }
  std::cout << "\n  saved bytes per layer (micro-batch 0): ";
  for (auto b : r.saved_bytes_per_layer.at(0)) std::cout << b << ' ';
  std::cout << "\n  saved tensors of layer 0:\n";
  std::map<std::string, int64_t> per;
  std::set<std::pair<uint64_t, int64_t>> seen;
  for (const auto& s : r.saves)
    if (s.key().rfind("layers.0.", 0) == 0 && !s.recompute && seen.insert({s.storage_id, s.offset}).second) per[s.key()] += s.bytes;
  const int64_t sbh = int64_t{m.seq_length} * m.micro_batch_size * m.hidden_size;
  for (const auto& [k, b] : per)
    std::cout << "    " << std::left << std::setw(44) << k << std::right << std::setw(12) << b << "  ("
              << std::setprecision(4) << static_cast<double>(b) / static_cast<double>(sbh) << " sbh)\n";
  std::cout << "\n  device peak " << r.device_peak << " bytes (op scratch held at once: " << r.workspace_peak
            << " bytes of workspace); wall time " << std::setprecision(3) << secs << " s\n";
  return 0;
}

int rcts_main(int argc, char** argv, MpiRun& run);

}  // namespace

int main(int argc, char** argv) {
  MpiRun run;
  int status = rcts_main(argc, argv, run);
  if (run.agreement) status = agree_on_exit(*run.agreement, status, run.failed_here, run.error);
  return status;
}

namespace {

int rcts_main(int argc, char** argv, MpiRun& run) {
  CLI::App app{"rcts: deterministic conformance suite for activation recompute and offload"};
  app.set_version_flag("--version", std::string(kVersion) + " (" + kGitSha + ")");
  app.require_subcommand(1);

  RunOptions opt;
  std::string golden_dir;
  std::vector<std::string> paths;
  std::string json_out, junit_out, dump_dir, mutant, config_file, case_id;
  bool as_json = false, all_killers = false;
  std::vector<std::string> only;
  std::string backend_name;
  auto add_backend = [&](CLI::App* sub, const char* default_text) {
    sub->add_option("--backend", backend_name, "backend to run on: " + backend_names() + " (default: " + default_text + ")");
  };

  const std::string limits_help =
      "Limits: JSON nested at most " + std::to_string(limits::kMaxJsonDepth) + " levels, files up to " +
      std::to_string(limits::kMaxJsonFileBytes >> 20) + " MiB; num_layers <= " + std::to_string(limits::kMaxLayers) +
      ", micro_batches <= " + std::to_string(limits::kMaxMicroBatches) + ", steps <= " +
      std::to_string(limits::kMaxSteps) + "; link_bandwidth_gbps 0 or >= " + fmt_number(limits::kMinLinkBandwidthGbps) +
      ", link_latency_us <= " + fmt_number(limits::kMaxLinkLatencyUs) +
      ". Before a config runs, its estimated memory, work and link sleep are checked against "
      "--max-bytes, --max-work and --max-link-seconds (see cases/README.md).";
  // Resource limits (reference/config/limits.hpp, cases/README.md "Limits"): every
  // config's estimate is checked before it runs.
  auto add_limits = [&](CLI::App* sub) {
    sub->footer(limits_help);
    sub->add_option("--max-bytes", opt.limits.max_bytes, "refuse a config whose estimated memory exceeds this many bytes")
        ->capture_default_str();
    sub->add_option("--max-work", opt.limits.max_work, "refuse a config whose estimated work exceeds this many FLOP")
        ->capture_default_str();
    sub->add_option("--max-link-seconds", opt.limits.max_link_seconds,
                    "refuse an offload config whose link model would sleep longer than this")
        ->capture_default_str();
  };
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("paths", paths, "case files or directories (default: cases/)");
    sub->add_option("--filter", opt.filter, "glob over case ids, e.g. 'selective.*'");
    sub->add_option("--golden-dir", golden_dir, "golden directory (default: golden/)");
  };
  auto* run_cmd = app.add_subcommand("run", "run cases and check them");
  add_common(run_cmd);
  add_backend(run_cmd, "every backend a case lists; one that cannot run here gives skips with the reason");
  add_limits(run_cmd);
  run_cmd->add_option("--json", json_out, "write results as JSON");
  run_cmd->add_option("--junit", junit_out, "write results as JUnit XML");
  auto* dump_opt = run_cmd->add_option("--dump", dump_dir, "write every run as a format-1 dump (docs/dump-format.md) under DIR");
  bool dump_replace = false;
  run_cmd->add_flag("--dump-replace", dump_replace, "with --dump: replace a non-empty DIR whole")->needs(dump_opt);
  run_cmd->add_option("--mutant", mutant, "switch on a compiled-in fault (see `rcts mutants --list`)");
  auto* check_cmd = app.add_subcommand("check", "run cases' checks over dumps of any implementation (docs/dump-format.md)");
  std::vector<std::string> check_dirs;
  check_cmd->add_option("dirs", check_dirs, "dump directories: every dump.json below them")->required();
  check_cmd->add_option("--cases", paths, "case files or directories the dumps' cases are in (default: cases/)");
  check_cmd->add_option("--filter", opt.filter, "glob over case ids");
  check_cmd->add_option("--golden-dir", golden_dir, "golden directory (default: golden/)");
  check_cmd->add_option("--json", json_out, "write results as JSON");
  check_cmd->add_option("--junit", junit_out, "write results as JUnit XML");
  double reference_rtol = 0, reference_atol = 0;
  auto* reference_opt = check_cmd->add_option(
      "--reference-tolerance", reference_rtol,
      "also run rcts's reference of every dumped run and compare losses, outputs and gradients: fail a tensor when "
      "max abs error > ATOL + RTOL * max |reference|");
  check_cmd->add_option("--reference-atol", reference_atol, "absolute part of the reference tolerance (default 0)")
      ->needs(reference_opt);
  add_backend(check_cmd, "cpu; the reference's backend with --reference-tolerance");
  add_limits(check_cmd);
  auto* checks = app.add_subcommand("checks", "list the check kinds a case's \"expect\" may name");
  auto* list = app.add_subcommand("list", "list cases");
  add_common(list);
  auto* explain = app.add_subcommand("explain", "print a case's plan: configs, chunks, recomputed modules, bytes, seeds");
  explain->add_option("case", case_id, "case id or case file")->required();
  explain->add_option("--cases", paths, "where to look for the case (default: cases/)");
  add_backend(explain, "cpu");
  add_limits(explain);
  auto* memory = app.add_subcommand("memory", "analytic activation-memory calculator (Korthikanti et al. 2022)");
  memory->add_option("--config", config_file, "config JSON (default: built-in defaults)");
  memory->add_flag("--json", as_json, "print JSON instead of the table");
  auto* regen = app.add_subcommand("regen-golden", "rewrite golden files from the current code and say what changed");
  add_common(regen);
  add_backend(regen, "cpu");
  auto* mutants = app.add_subcommand("mutants", "run every mutant against the cases; fail if one survives");
  add_common(mutants);
  add_backend(mutants, "cpu");
  add_limits(mutants);
  mutants->add_flag("--all-killers", all_killers, "run every case per mutant (default: stop at the first killer)");
  mutants->add_option("--only", only, "mutant names to run");
  bool list_mutants = false;
  mutants->add_flag("--list", list_mutants, "list the mutants and exit");
  auto* block = app.add_subcommand("block", "run the dense block on one config and print a summary");
  block->add_option("--config", config_file, "config JSON (default: a small built-in config)");
  add_backend(block, "cpu");
  add_limits(block);
  app.footer(limits_help);

  CLI11_PARSE(app, argc, argv);
#ifdef RCTS_HAVE_MPI
  if (launched_by_mpi()) {
    run.mpi.emplace(&argc, &argv);
    run.world = MpiCommunicator::world();
    opt.world = run.world.get();
    opt.world_size = run.world->size();
    if (opt.world_size > 1) opt.agreement = &run.agreement.emplace(*run.world);
  }
#endif
  opt.test_throw_on_rank = throw_on_rank_from_env();
  NullBuffer null_buffer;
  std::ostream null_stream(&null_buffer);
  const bool rank0 = !opt.world || opt.world->rank() == 0;
  std::ostream& out = rank0 ? std::cout : null_stream;
  opt.golden_dir = golden_dir.empty() ? default_dir("golden") : fs::path(golden_dir);

  try {
    // --dump makes every rank take part in preparing the dump directory: part of the command.
    if (opt.agreement)
      agree_on_start(*opt.agreement,
                     "rcts " + app.get_subcommands().front()->get_name() + (dump_dir.empty() ? "" : " --dump"));
    // An explicit --backend must be able to run; without one, `run` takes every backend
    // a case lists (from the pool) and the other commands the reference.
    std::unique_ptr<Backend> backend;
    BackendPool pool;
    if (*run_cmd && backend_name.empty()) {
      opt.pool = &pool;
    } else if (*run_cmd || *explain || *regen || *mutants || *block || (*check_cmd && *reference_opt)) {
      backend = make_backend(backend_name.empty() ? "cpu" : backend_name);
      opt.backend = backend.get();
    }
    // A backend with device memory moves its bytes over its own world (NCCL), made
    // collectively over the MPI world.
    std::unique_ptr<Communicator> device_world;
    if (backend && opt.world && opt.world->size() > 1) {
      device_world = backend->make_world(*opt.world);
      opt.device_world = device_world.get();
    }
    if (*block) return block_command(config_file, *backend, opt.limits);
    if (*memory) {
      Config cfg = read_config_file(config_file);
      std::cout << (as_json ? memory_report_json(cfg).dump(2) + "\n" : memory_report_text(cfg));
      return 0;
    }
    if (*checks) {
      for (const auto& k : check_kinds())
        std::cout << std::left << std::setw(20) << k.name << std::setw(12)
                  << (k.case_level_only ? "case" : "case, variant") << k.summary << "\n";
      return 0;
    }
    if (*mutants && list_mutants) {
      for (const auto& f : all_faults()) std::cout << std::left << std::setw(32) << f.name << f.description << "\n";
      return 0;
    }
    std::vector<Case> cases;
    std::string load_error;
    try {
      cases = load_cases(case_paths(paths));
    } catch (const std::exception& e) {
      if (!opt.agreement) throw;
      load_error = e.what();
    }
    if (opt.agreement) agree_on_load(*opt.agreement, load_error);
    if (*list) {
      for (const auto& c : cases)
        if (opt.filter.empty() || glob_match(opt.filter, c.id))
          std::cout << std::left << std::setw(44) << c.id << c.description << "\n";
      return 0;
    }
    if (*explain) {
      for (const auto& c : cases)
        if (c.id == case_id || c.file == fs::path(case_id)) {
          std::cout << explain_case(c, *backend, opt.limits);
          return 0;
        }
      if (fs::exists(case_id)) {
        std::cout << explain_case(load_case(case_id), *backend, opt.limits);
        return 0;
      }
      std::cerr << "rcts explain: no case '" << case_id << "' (try `rcts list`)\n";
      return 2;
    }
    if (*regen) return regen_golden(cases, opt, out);
    if (*check_cmd) {
      if (*reference_opt) opt.reference = ReferenceTolerance{reference_rtol, reference_atol};
      const auto groups = index_dumps(std::vector<fs::path>(check_dirs.begin(), check_dirs.end()));
      auto header = make_header(opt);
      header.backend = "dumps";
      out << "rcts " << header.version << " (" << header.git_sha << ")  checking dumps, " << header.ranks
          << " rank(s), " << groups.size() << " dumped case(s)\n";
      const auto results = check_dump_groups(cases, groups, opt, rank0 ? &std::cout : nullptr);
      out << "\n" << summary_table(header, results);
      if (rank0) {
        write_file(json_out, results_json(header, results).dump(2) + "\n");
        write_file(junit_out, junit_xml(header, results));
      }
      const auto t = tally(results);
      return t.failed + t.errors > 0 || results.empty() ? 1 : 0;
    }
    if (*mutants) {
const auto results = run_mutants(cases, opt, all_killers, only, out);
      int killed = 0;
      for (const auto& m : results) killed += m.killers.empty() ? 0 : 1;
      out << "mutation score: " << killed << "/" << results.size() << " killed\n";
      return killed == static_cast<int>(results.size()) && !results.empty() ? 0 : 1;
    }
    // run
    std::optional<FaultScope> fault;
    if (!mutant.empty()) fault.emplace(parse_fault(mutant));
    std::optional<DumpStaging> dump;
    if (!dump_dir.empty()) opt.dump_dir = dump.emplace(dump_dir, dump_replace, opt.agreement).staging();
    const size_t selected = select_cases(cases, opt.filter).size();
    const auto header = make_header(opt);
    out << "rcts " << header.version << " (" << header.git_sha << ")  backend " << header.backend << ", "
        << header.ranks << " rank(s), " << selected << " case(s)" << (mutant.empty() ? "" : ", mutant " + mutant)
        << "\n";
    const auto results = run_cases(cases, opt, rank0 ? &std::cout : nullptr);
    if (dump) dump->commit();
    out << "\n" << summary_table(header, results);
    if (rank0) {
      write_file(json_out, results_json(header, results).dump(2) + "\n");
      write_file(junit_out, junit_xml(header, results));
    }
    const auto t = tally(results);
    return t.failed + t.errors > 0 ? 1 : 0;
  } catch (const AgreedError& e) {  // every rank has it: rank 0 says it once
    if (rank0) std::cerr << "rcts: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    const std::string config = config_file.empty() ? std::string("the default config") : config_file;
    const std::string what = *explain  ? "explaining case " + case_id
                             : *memory ? "computing the memory model of " + config
                             : *block  ? "running the block on " + config
                                       : std::string("loading the cases");
    std::cerr << "rcts: out of memory (std::bad_alloc) while " << what << "\n";
    run.failed_here = true;
    run.error = "out of memory while " + what;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rcts: " << (opt.agreement ? "rank " + std::to_string(opt.world->rank()) + ": " : "") << e.what()
              << "\n";
    run.failed_here = true;
    run.error = e.what();
    return 2;
  }
}
}  // namespace
