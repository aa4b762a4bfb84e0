// `rcts block [--config F] [--json]`: runs the dense block on one config (a small
// built-in one by default) and prints a short human summary or JSON.
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>

#include "harness/cli/commands.hpp"
#include "harness/cli/json_outputs.hpp"
#include "harness/io/provenance.hpp"
#include "harness/io/version.hpp"
#include "reference/config/validate.hpp"

namespace rcts::harness::cli {

namespace {

// `rcts block`: the dense block on one config, with a short human summary.
int block_command(const std::string& config_file, Backend& backend, const RunLimits& limits, bool as_json) {
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
  check_supported_or_throw(cfg, supported_on(backend));
  check_run_limits(cfg, config_file.empty() ? "default config" : config_file, limits);
  const auto t0 = std::chrono::steady_clock::now();
  const RunRecord r = execute(cfg, backend);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (as_json) {
    std::cout << block_json(cfg, r, backend, secs).dump(2) << "\n";
    return 0;
  }
  const auto& m = cfg.model;
  std::cout << "rcts " << kVersion << " (" << run_git_sha() << ")  dense block, backend " << backend.name() << " ("
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

class BlockCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("block", "run the dense block on one config and print a summary");
    sub->add_option("--config", config_file_, "config JSON (default: a small built-in config)");
    sub->add_flag("--json", json_, "print JSON (docs/json-report.md)");
    add_backend(sub, shared.backend_name, "cpu");
    add_limits(sub, shared.opt.limits);
  }
  BackendNeed backend_need() const override { return BackendNeed::one; }
  bool needs_cases() const override { return false; }
  std::string activity() const override {
    return "running the block on " + (config_file_.empty() ? std::string("the default config") : config_file_);
  }
  int run(Session& s) override { return block_command(config_file_, *s.backend, s.opt.limits, json_); }

 private:
  std::string config_file_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_block_command() { return std::make_unique<BlockCommand>(); }

}  // namespace rcts::harness::cli
