// `rcts memory [--config F | --megatron-args ARGS | --megatron-file F] [--json] [--print-config]`:
// the analytic activation-memory calculator (Korthikanti et al. 2022), on an rcts
// config or on Megatron-LM settings (docs/megatron.md).
#include <iostream>

#include "harness/cli/commands.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/megatron/megatron_args.hpp"
#include "reference/config/config_json.hpp"
#include "reference/memory_model/report.hpp"

namespace rcts::harness::cli {

namespace {

std::string join_words(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

class MemoryCommand : public Command {
 public:
  void add(CLI::App& app, SharedArgs&) override {
    sub = app.add_subcommand("memory", "analytic activation-memory calculator (Korthikanti et al. 2022)");
    sub->add_option("--config", config_file_, "config JSON (default: built-in defaults)");
    sub->add_flag("--json", json_, "print JSON instead of the table");
    margs_ = sub->add_option("--megatron-args", megatron_args_,
                           "Megatron-LM arguments, e.g. \"--num-layers 24 --hidden-size 1024 ...\" (docs/megatron.md)");
    mfile_ = sub->add_option("--megatron-file", megatron_file_,
                           "a file of Megatron-LM arguments, or YAML (.yaml/.yml) mapping them to values");
    sub->add_flag("--print-config", print_config_, "print the rcts config (JSON) the settings map to, not the report");
    margs_->excludes(mfile_);
    sub->get_option("--config")->excludes(margs_)->excludes(mfile_);
  }
  bool needs_cases() const override { return false; }
  std::string activity() const override {
    return "computing the memory model of " + (config_file_.empty() ? std::string("the default config") : config_file_);
  }

  int run(Session&) override {
    Config cfg;
    if (margs_->count() || mfile_->count()) {  // given, even when empty
      const MegatronImport m = !mfile_->count() ? import_megatron_arg_string(megatron_args_)
                                                : import_megatron_file(megatron_file_);
      for (const auto& n : m.notes) std::cerr << "rcts: megatron: " << n << "\n";
      if (!m.ignored.empty())
        std::cerr << "rcts: megatron: ignored (no effect on what rcts models): " << join_words(m.ignored) << "\n";
      cfg = m.config;
    } else {
      cfg = read_config_file(config_file_);
    }
    if (print_config_) {
      std::cout << json_text(config_to_json(cfg), 2) << "\n";
      return 0;
    }
    std::cout << (json_ ? json_text(memory_report_json(cfg), 2) + "\n" : memory_report_text(cfg));
    return 0;
  }

 private:
  std::string config_file_, megatron_args_, megatron_file_;
  CLI::Option* margs_ = nullptr;
  CLI::Option* mfile_ = nullptr;
  bool json_ = false, print_config_ = false;
};

}  // namespace

std::unique_ptr<Command> make_memory_command() { return std::make_unique<MemoryCommand>(); }

}  // namespace rcts::harness::cli
