#include <cmath>
#include <sstream>

#include "harness/cli/command.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/io/strict_json.hpp"
#include "backends/registry.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/limits.hpp"
#include "reference/config/validate.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness::cli {

namespace fs = std::filesystem;

namespace {
std::string fmt_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

const std::string& limits_help() {
  static const std::string help =
      "Limits: JSON nested at most " + std::to_string(limits::kMaxJsonDepth) + " levels, files up to " +
      std::to_string(limits::kMaxJsonFileBytes >> 20) + " MiB; num_layers <= " + std::to_string(limits::kMaxLayers) +
      ", micro_batches <= " + std::to_string(limits::kMaxMicroBatches) + ", steps <= " +
      std::to_string(limits::kMaxSteps) + "; link_bandwidth_gbps 0 or >= " + fmt_number(limits::kMinLinkBandwidthGbps) +
      ", link_latency_us <= " + fmt_number(limits::kMaxLinkLatencyUs) +
      ". Before a config runs, its estimated memory, work and link sleep are checked against "
      "--max-bytes, --max-work and --max-link-seconds (see cases/README.md).";
  return help;
}

CLI::Validator finite_number(double lo, bool inclusive) {
  const std::string want = (inclusive ? ">= " : "> ") + fmt_number(lo);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || (inclusive ? v < lo : v <= lo))
          return "'" + text + "': expected a finite number " + want;
        return {};
      },
      "NUMBER " + want);
}

void add_limits(CLI::App* sub, RunLimits& limits) {
  sub->footer(limits_help());
  sub->add_option("--max-bytes", limits.max_bytes, "refuse a config whose estimated memory exceeds this many bytes")
      ->capture_default_str()->check(finite_number(0, false));
  sub->add_option("--max-work", limits.max_work, "refuse a config whose estimated work exceeds this many FLOP")
      ->capture_default_str()->check(finite_number(0, false));
  sub->add_option("--max-link-seconds", limits.max_link_seconds,
                  "refuse an offload config whose link model would sleep longer than this")
      ->capture_default_str()->check(finite_number(0, false));
}

void add_common(CLI::App* sub, SharedArgs& shared) {
  sub->add_option("paths", shared.paths, "case files or directories (default: cases/)");
  sub->add_option("--filter", shared.opt.scope.filter, "glob over case ids, e.g. 'selective.*'");
  sub->add_option("--golden-dir", shared.golden_dir, "golden directory (default: golden/)");
}

void add_backend(CLI::App* sub, std::string& name, const char* default_text) {
  sub->add_option("--backend", name, "backend to run on: " + backend_names() + " (default: " + default_text + ")");
}

fs::path default_dir(const char* name) {
  if (fs::exists(name)) return name;
  return fs::path(RCTS_SOURCE_DIR) / name;
}

std::vector<fs::path> case_paths(const std::vector<std::string>& given) {
  if (given.empty()) return {default_dir("cases")};
  return {given.begin(), given.end()};
}

std::vector<PathUse> case_path_uses(const SharedArgs& shared, const std::string& what) {
  std::vector<PathUse> out;
  for (const auto& p : case_paths(shared.paths)) out.push_back({PathUse::Kind::input, what, p.string()});
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  write_file_atomic(path, text);
}

Fault mutant_option(const std::string& name) {
  try {
    return parse_fault(name);
  } catch (const Error& e) {
    throw Error("--mutant " + name + ": " + e.message());
  }
}

Config read_config_file(const std::string& path) {
  if (path.empty()) return Config{};
  Config cfg = config_from_json(read_json_file(path, "config file"), path);
  validate_or_throw(cfg, path);  // rules across fields too, named after the file
  return cfg;
}

std::string Command::start_record() const {
  std::string line = "rcts " + sub->get_name();
  for (const CLI::Option* o : sub->get_options())
    if (o->count() && o->nonpositional()) {
      line += " " + o->get_name();
      for (const auto& r : o->results()) line += " " + r;
    }
  return line;
}

}  // namespace rcts::harness::cli
