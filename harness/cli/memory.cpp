// `rcts memory [--config F | --megatron-args ARGS | --megatron-file F] [--json] [--print-config]
// [--profile P]`: the analytic activation-memory calculator (Korthikanti et al. 2022), on
// an rcts config or on Megatron-LM settings (docs/megatron.md); with --profile, the
// per-layer saved-tensor inventory a framework's saved-tensor profile predicts
// (reference/memory_model/saved_profile.hpp).
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/cli/commands.hpp"
#include "harness/io/text_safety.hpp"
#include "harness/megatron/megatron_args.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/error.hpp"
#include "reference/memory_model/report.hpp"
#include "reference/memory_model/saved_profile.hpp"

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
    sub->add_option("--profile", profile_,
                    "print the per-layer saved tensors this saved-tensor profile predicts (e.g. torch-cpu)");
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
    if (!profile_.empty()) return print_inventory(cfg);
    std::cout << (json_ ? json_text(memory_report_json(cfg), 2) + "
" : memory_report_text(cfg));
    return 0;
  }

  int print_inventory(const Config& cfg) {
    const SavedProfile* p = find_profile(profile_);
    std::string known;
    for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
    if (!p) throw Error("--profile " + profile_ + ": not a saved-tensor profile (" + known + ")");
    const auto inv = stage_inventory(*p, cfg);
    nlohmann::json layers = nlohmann::json::array();
    for (size_t l = 0; l < inv.size(); ++l) {
      int64_t total = 0;
      nlohmann::json ts = nlohmann::json::array();
      for (const auto& e : inv[l]) {
        total += e.bytes;
        ts.push_back({{"module", e.module}, {"op", e.op}, {"tensor", e.tensor}, {"dtype", e.dtype},
                      {"shape", e.shape}, {"bytes", e.bytes}, {"row", e.row}});
        if (!json_)
          std::cout << "layers." << l << (e.module.empty() ? "" : "." + e.module) << "  " << e.op << "  " << e.tensor
                    << "  " << e.dtype << " " << shape_text(e.shape) << "  " << e.bytes << " bytes  (" << e.row << ")\n";
      }
      if (!json_) std::cout << "layers." << l << ": " << total << " bytes\n";
      layers.push_back({{"layer", l}, {"bytes", total}, {"tensors", ts}});
    }
    if (json_) std::cout << json_text(nlohmann::json{{"profile", std::string(p->name)}, {"layers", layers}}, 2) << "\n";
    return 0;
  }

 private:
  std::string config_file_, megatron_args_, megatron_file_, profile_;
  CLI::Option* margs_ = nullptr;
  CLI::Option* mfile_ = nullptr;
  bool json_ = false, print_config_ = false;
};

}  // namespace

std::unique_ptr<Command> make_memory_command() { return std::make_unique<MemoryCommand>(); }

}  // namespace rcts::harness::cli
