// `rcts block [--config F] [--json]`: runs the dense block on one config (a small
// built-in one by default) and prints a short human summary or JSON (block_view.hpp).
#include <chrono>
#include <iostream>

#include "harness/cli/block_view.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/cli/commands.hpp"
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
  const BlockSummary b = summarize_block(cfg, r, backend, secs);
  std::cout << (as_json ? json_text(block_json(b), 2) + "\n" : block_text(b));
  return 0;
}

class BlockCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs& shared) override {
    sub = app.add_subcommand("block", "run the dense block on one config and print a summary");
    sub->add_option("--config", config_file_, "config JSON (default: a small built-in config)");
    sub->add_flag("--json", json_, "print JSON (docs/json-report.md)");
    add_backend(sub, shared.backend_name, "cpu");
    add_limits(sub, shared.opt.scope.limits);
  }
  BackendNeed backend_need() const override { return BackendNeed::one; }
  bool needs_cases() const override { return false; }
  std::string activity() const override {
    return "running the block on " + (config_file_.empty() ? std::string("the default config") : config_file_);
  }
  int run(Session& s) override { return block_command(config_file_, *s.backend, s.opt.scope.limits, json_); }

 private:
  std::string config_file_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_block_command() { return std::make_unique<BlockCommand>(); }

}  // namespace rcts::harness::cli
