// Config validation (design §7). Every rule has a stable code; a
// broken rule yields a ConfigIssue naming the fields and values. Rules run in a
// fixed order, so issue lists are deterministic.
//
// Two layers:
//   validate()        - is the config meaningful? (Megatron-LM's rules, stricter where
//                       Megatron accepts nonsense)
//   check_supported() - can the reference model run it today? (feature gate, code
//                       "feature.not_implemented"; later work switches features on)
#pragma once
#include <string>
#include <vector>

#include "reference/config/config.hpp"
#include "reference/config/config_error.hpp"

namespace rcts {

// Legal names (design §6, §7).
const std::vector<std::string>& recompute_module_names();  // normal + output-discarding
const std::vector<std::string>& offload_module_names();

// Megatron-LM's deprecated moe_layer_recompute means selective granularity with "moe"
// appended to recompute_modules. Returns the recompute settings the run actually uses
// (unchanged when the flag is off; with granularity full the flag is a validate() error).
RecomputeConfig effective_recompute(const RecomputeConfig& r);

// All issues, in rule order (empty: valid).
std::vector<ConfigIssue> validate(const Config& cfg);
// Only the rules about single fields (value domains: sizes, ranges, names). The JSON
// reader applies these while parsing so errors point at the offending JSON value.
std::vector<ConfigIssue> validate_fields(const Config& cfg);
// Throws ConfigError (code and path of the first issue) listing every issue.
void validate_or_throw(const Config& cfg, const std::string& where = "config");

// Every rule code validate() can emit, in rule order (for coverage tests).
std::vector<std::string> all_rule_codes();

// What the reference model implements. Defaults: the dense GPT layer on one rank.
struct Supported {
  bool swiglu = true;
  bool moe = true;   // MoE layers, EP/ETP, grouped GEMM, shared experts
  bool mla = true;                 // multi-latent attention (design §14)
  bool gdn = true;   // gated delta net layers, hybrid patterns, gdn_norm_out (design §15)
  bool tensor_parallel = true;     // TP > 1 (and so SP, distribute_saved_activations)
  bool pipeline_parallel = true;   // PP > 1 (1F1B, design §16; the combinations it lacks are gaps)
  bool fine_grained_offload = true;
  bool expert_offload = true;      // offload_modules expert_fc1 / moe_act
  bool cpu_offloading = true;
  bool flash_attention = false;    // a fused attention: only backends that have one (supported_on)
  static Supported everything();
};

inline constexpr const char* kFeatureNotImplemented = "feature.not_implemented";

// Issues with code "feature.not_implemented", one per feature switched off in `s` and
// one per combination of refusals() the config uses.
std::vector<ConfigIssue> check_supported(const Config& cfg, const Supported& s = {});
void check_supported_or_throw(const Config& cfg, const Supported& s = {},
                              const std::string& where = "config");

}  // namespace rcts
