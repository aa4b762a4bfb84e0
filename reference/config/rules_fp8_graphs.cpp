// FP8 and CUDA-graph rules (design §12). Megatron-LM's TransformerConfig checks: FP8
// delayed scaling rejects the output-discarding `moe_act` / `layernorm` recompute; with
// CUDA graphs, full recompute needs whole-iteration capture; a selective checkpoint
// region must lie wholly inside or wholly outside the captured scope (Megatron-LM
// rejects `moe` recompute with only the router captured).
#include "reference/config/rules_fp8_graphs.hpp"

#include <algorithm>
#include <set>

#include "reference/config/limits.hpp"
#include "reference/config/validate.hpp"

namespace rcts {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

struct Rule {
  const char* code;
  bool field_level;
  void (*check)(const Config&, const char* code, std::vector<ConfigIssue>&);
};

std::vector<std::string> selective_modules(const Config& c) {
  RecomputeConfig r = effective_recompute(c.recompute);
  return r.recompute_granularity == "selective" ? r.recompute_modules : std::vector<std::string>{};
}
bool graphs_on(const Config& c) { return c.model.cuda_graph_impl != "none"; }

// Parts of a layer a graph scope can capture or a checkpoint region can span.
enum Part : unsigned {
  kAttn = 1,           // input layernorm, attention (core, MLA, GDN), its residual
  kMlp = 2,            // pre-MLP layernorm and the dense MLP
  kRouter = 4,         // MoE router
  kDispatch = 8,       // MoE token preprocessing / dispatch
  kExperts = 16,       // routed experts, combine
  kShared = 32,        // shared experts
  kPreMoeNorm = 64,    // pre-MLP layernorm of a MoE layer
};
constexpr unsigned kMoeAll = kRouter | kDispatch | kExperts | kShared | kPreMoeNorm;

unsigned scope_parts(const std::string& s) {
  if (s == "attn") return kAttn;
  if (s == "mlp") return kMlp;
  if (s == "moe") return kMoeAll;
  if (s == "moe_router") return kRouter;
  if (s == "moe_preprocess") return kRouter | kDispatch;
  return 0;
}

// Each checkpoint region of a selective module, as the parts it spans.
std::vector<unsigned> module_regions(const std::string& m) {
  if (m == "core_attn" || m == "mla_up_proj" || m == "gdn_norm_out") return {kAttn};
  if (m == "mlp") return {kMlp};
  if (m == "layernorm") return {kAttn, kMlp, kPreMoeNorm};  // each norm is its own region
  if (m == "moe") return {kRouter | kDispatch | kExperts | kShared};
  if (m == "moe_act") return {kExperts};
  if (m == "shared_experts") return {kShared};
  return {};
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"fp8.format", true, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         if (c.model.fp8 && *c.model.fp8 != "e4m3" && *c.model.fp8 != "hybrid")
           out.push_back({code, "model.fp8 = '" + *c.model.fp8 + "' must be e4m3 or hybrid (or null: no FP8)",
                          {"model.fp8"}});
       }},
      {"fp8.recipe", true, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         const auto& r = c.model.fp8_recipe;
         if (r != "delayed" && r != "tensorwise")
           out.push_back({code, "model.fp8_recipe = '" + r + "' must be delayed or tensorwise", {"model.fp8_recipe"}});
       }},
      {"fp8.amax_compute_algo", true, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         const auto& a = c.model.fp8_amax_compute_algo;
         if (a != "most_recent" && a != "max")
           out.push_back({code, "model.fp8_amax_compute_algo = '" + a + "' must be most_recent or max",
                          {"model.fp8_amax_compute_algo"}});
       }},
      {"fp8.amax_history_range", true, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         const int n = c.model.fp8_amax_history_len, m = c.model.fp8_margin;
         if (n < 1 || n > limits::kMaxAmaxHistory)
           out.push_back({code,
                          "model.fp8_amax_history_len = " + std::to_string(n) + " must be in [1, " +
                              std::to_string(limits::kMaxAmaxHistory) + "]",
                          {"model.fp8_amax_history_len"}});
         if (m < 0 || m > limits::kMaxFp8Margin)
           out.push_back({code,
                          "model.fp8_margin = " + std::to_string(m) + " must be in [0, " +
                              std::to_string(limits::kMaxFp8Margin) + "]",
                          {"model.fp8_margin"}});
       }},
      {"cuda_graph.impl", true, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         const auto& i = c.model.cuda_graph_impl;
         if (i != "none" && i != "local" && i != "transformer_engine" && i != "full_iteration")
           out.push_back({code, "model.cuda_graph_impl = '" + i + "' must be none, local, transformer_engine or full_iteration",
                          {"model.cuda_graph_impl"}});
       }},
      {"cuda_graph.scope_names", true, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         std::set<std::string> seen;
         for (const auto& s : c.model.cuda_graph_scope) {
           if (!contains(cuda_graph_scope_names(), s))
             out.push_back({code,
                            "model.cuda_graph_scope contains unknown scope '" + s + "' (legal: " +
                                join(cuda_graph_scope_names()) + ")",
                            {"model.cuda_graph_scope"}});
           else if (!seen.insert(s).second)
             out.push_back({code, "model.cuda_graph_scope lists '" + s + "' twice", {"model.cuda_graph_scope"}});
         }
       }},
      {"cuda_graph.scope_vs_impl", false, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         const auto& i = c.model.cuda_graph_impl;
         if (!c.model.cuda_graph_scope.empty() && (i == "none" || i == "full_iteration"))
           out.push_back({code,
                          "model.cuda_graph_scope = [" + join(c.model.cuda_graph_scope) +
                              "] needs a per-layer graph (model.cuda_graph_impl local or transformer_engine), but "
                              "model.cuda_graph_impl = " + i,
                          {"model.cuda_graph_scope", "model.cuda_graph_impl"}});
       }},
      {"cuda_graph.full_recompute_needs_full_iteration", false,
       [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         if (graphs_on(c) && c.recompute.recompute_granularity == "full" && c.model.cuda_graph_impl != "full_iteration")
           out.push_back({code,
                          "recompute.recompute_granularity = full with CUDA graphs needs whole-iteration capture "
                          "(model.cuda_graph_impl = full_iteration), but model.cuda_graph_impl = " +
                              c.model.cuda_graph_impl,
                          {"recompute.recompute_granularity", "model.cuda_graph_impl"}});
       }},
      {"cuda_graph.region_straddles_scope", false, [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         const auto& i = c.model.cuda_graph_impl;
         if (i != "local" && i != "transformer_engine") return;
         unsigned captured = 0;
         for (const auto& s : c.model.cuda_graph_scope) captured |= scope_parts(s);
         if (c.model.cuda_graph_scope.empty()) captured = ~0u;  // the whole layer
         for (const auto& m : selective_modules(c))
           for (unsigned region : module_regions(m)) {
             const unsigned in = region & captured;
             if (in != 0 && in != region) {
               out.push_back({code,
                              "recompute.recompute_modules contains '" + m + "', a checkpoint region only partly inside the "
                              "captured "
                              "model.cuda_graph_scope = [" + join(c.model.cuda_graph_scope) +
                              "]: a region must lie wholly inside or wholly outside the graph",
                              {"recompute.recompute_modules", "model.cuda_graph_scope"}});
               break;
             }
           }
       }},
      {"recompute.fp8_delayed_vs_output_discarding", false,
       [](const Config& c, const char* code, std::vector<ConfigIssue>& out) {
         if (!c.model.fp8 || c.model.fp8_recipe != "delayed") return;
         for (const char* m : {"moe_act", "layernorm"})
           if (contains(selective_modules(c), m))
             out.push_back({code,
                            std::string("recompute.recompute_modules contains '") + m +
                                "', which FP8 delayed scaling does not support (model.fp8 = " + *c.model.fp8 +
                                ", model.fp8_recipe = delayed)",
                            {"recompute.recompute_modules", "model.fp8_recipe"}});
       }},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& cuda_graph_scope_names() {
  static const std::vector<std::string> names = {"attn", "mlp", "moe", "moe_router", "moe_preprocess"};
  return names;
}

std::vector<ConfigIssue> fp8_graph_issues(const Config& c, bool field_level_only) {
  std::vector<ConfigIssue> out;
  for (const Rule& r : rules())
    if (!field_level_only || r.field_level) r.check(c, r.code, out);
  return out;
}

std::vector<std::string> fp8_graph_rule_codes() {
  std::vector<std::string> codes;
  for (const Rule& r : rules()) codes.emplace_back(r.code);
  return codes;
}

}  // namespace rcts
