// One `rcts` subcommand per file under harness/cli/ (design §10). Each declares its
// options on its CLI11 subcommand and says what it needs; harness/main.cpp parses the
// command line, starts MPI and the ranks' agreement, makes the backend the command
// asks for, loads the cases when it needs them, runs it and reports its errors.
#pragma once
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "harness/cases/case.hpp"
#include "harness/cli/path_uses.hpp"
#include "harness/run/runner.hpp"
#include "reference/config/config.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness::cli {

// Options several subcommands share; each subcommand binds the ones it takes.
struct SharedArgs {
  RunOptions opt;                  // filter and limits are bound directly
  std::vector<std::string> paths;  // case files or directories
  std::string golden_dir;
  std::string backend_name;
};

// What main.cpp has prepared when a command runs.
struct Session {
  RunOptions& opt;
  BackendPool& pool;
  Backend* backend = nullptr;  // the backend the command asked for, else null
  std::ostream& out;           // rank 0: std::cout; other ranks: nowhere
  bool rank0 = true;
  std::vector<Case> cases;     // loaded when needs_cases()
  bool named_files = false;    // a case file was named by itself: part of the case set was chosen
};

enum class BackendNeed {
  none,
  one,               // --backend, else the reference (cpu)
  pool_unless_named  // --backend, else every backend a case lists (BackendPool)
};

class Command {
 public:
  virtual ~Command() = default;
  // Adds the subcommand and its options to `app`; sets sub.
  virtual void add(CLI::App& app, SharedArgs& shared) = 0;
  virtual BackendNeed backend_need() const { return BackendNeed::none; }
  virtual bool needs_cases() const { return true; }
  // What the ranks agree on at start: the subcommand and every option given (outputs,
  // filters, limits...), not the case paths: MPMD ranks given other options are refused
  // at the start, while ranks given other case files reach the agreement on what they
  // loaded (agreement.hpp). common.cpp.
  std::string start_record() const;
  // What it was doing when memory ran out ("explaining case X").
  virtual std::string activity() const { return "loading the cases"; }
  // Every file and directory it reads or writes, for refuse_path_clashes (main.cpp
  // calls it before the command runs). None by default: a command that prints only.
  virtual std::vector<PathUse> path_uses(const SharedArgs&) const { return {}; }
  virtual int run(Session& s) = 0;

  CLI::App* sub = nullptr;
};

// Every subcommand, in the order `rcts --help` lists them (commands.cpp).
std::vector<std::unique_ptr<Command>> make_commands();

// --- helpers the commands share (common.cpp) -----------------------------------------
// The footer naming the input limits and the --max-* options.
const std::string& limits_help();
// --max-bytes, --max-work, --max-link-seconds: every config's estimate is checked
// against them before it runs (reference/config/limits.hpp, cases/README.md "Limits").
void add_limits(CLI::App* sub, RunLimits& limits);
// A validator for number options: finite and > lo (or >= lo when `inclusive`); its
// message names the value (CLI11 puts the option's name before it).
CLI::Validator finite_number(double lo, bool inclusive);
// paths, --filter, --golden-dir.
void add_common(CLI::App* sub, SharedArgs& shared);
void add_backend(CLI::App* sub, std::string& name, const char* default_text);
// `name` in the current directory, else in the source tree rcts was built from.
std::filesystem::path default_dir(const char* name);
std::vector<std::filesystem::path> case_paths(const std::vector<std::string>& given);
// The case paths (or the default cases/) as inputs named `what`.
std::vector<PathUse> case_path_uses(const SharedArgs& shared, const std::string& what = "case path");
// Writes `text` to `path` (atomically); an empty path writes nothing.
void write_file(const std::string& path, const std::string& text);
// --mutant NAME as a fault; an unknown name is an rcts::Error naming the option.
Fault mutant_option(const std::string& name);
// The config in a JSON file, validated (errors name the file); an empty path gives the defaults.
Config read_config_file(const std::string& path);

}  // namespace rcts::harness::cli
