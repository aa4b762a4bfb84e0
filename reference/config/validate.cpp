// The validation rules, one table entry each, in the order validate() reports them.
// Field-level rules (single-field value domains) come first; the JSON reader runs
// them while parsing. Rules about recompute modules that depend on model features
// apply to the effective selective module list (after the moe_layer_recompute alias).
#include "reference/config/validate.hpp"

#include "reference/config/limits.hpp"
#include "reference/config/rules_fp8_graphs.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace rcts {
namespace {

std::string num(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
std::string num(int64_t v) { return std::to_string(v); }
std::string num(int v) { return std::to_string(v); }
std::string opt(const std::optional<int>& v) { return v ? std::to_string(*v) : "unset"; }
std::string opt(const std::optional<std::string>& v) { return v ? *v : "unset"; }
std::string flag(bool b) { return b ? "true" : "false"; }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}
bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Collects the issues of one rule.
class Emit {
 public:
  Emit(const char* code, std::vector<ConfigIssue>& out) : code_(code), out_(out) {}
  void operator()(std::string message, std::vector<std::string> fields) {
    out_.push_back({code_, std::move(message), std::move(fields)});
  }

 private:
  const char* code_;
  std::vector<ConfigIssue>& out_;
};

struct Rule {
  const char* code;
  bool field_level;
  void (*check)(const Config&, Emit&);
};

// Effective selective module list (empty unless the run is selective).
std::vector<std::string> selective_modules(const Config& c) {
  RecomputeConfig r = effective_recompute(c.recompute);
  if (r.recompute_granularity != "selective") return {};
  return r.recompute_modules;
}
bool any_recompute(const Config& c) {
  return c.recompute.recompute_granularity.has_value() || c.recompute.moe_layer_recompute;
}
bool is_full(const Config& c) { return c.recompute.recompute_granularity == "full"; }

void check_min(Emit& e, const std::string& field, int64_t v, int64_t min) {
  if (v < min) e(field + " = " + num(v) + " must be >= " + num(min), {field});
}

void check_max(Emit& e, const std::string& field, int64_t v, int64_t max) {
  if (v > max) e(field + " = " + num(v) + " must be <= " + num(max) + " (rcts resource limit)", {field});
}

void check_names(Emit& e, const std::string& field, const std::vector<std::string>& names,
                 const std::vector<std::string>& legal) {
  for (const auto& n : names)
    if (!contains(legal, n))
      e(field + " contains unknown module '" + n + "' (legal: " + join(legal) + ")", {field});
}
void check_unique(Emit& e, const std::string& field, const std::vector<std::string>& names) {
  std::set<std::string> seen;
  for (const auto& n : names)
    if (!seen.insert(n).second) e(field + " lists module '" + n + "' twice", {field});
}

// ---- the rules -----------------------------------------------------------------------
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      // Field-level value domains.
      {"model.size_range", true, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         check_min(e, "model.num_layers", m.num_layers, 1);
         check_min(e, "model.hidden_size", m.hidden_size, 1);
         check_min(e, "model.num_attention_heads", m.num_attention_heads, 1);
         check_min(e, "model.seq_length", m.seq_length, 1);
         check_min(e, "model.micro_batch_size", m.micro_batch_size, 1);
         check_min(e, "model.ffn_hidden_size", m.ffn_hidden_size, 1);
       }},
      {"model.gdn_size_range", true, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         check_min(e, "model.linear_attention_freq", m.linear_attention_freq, 0);
         check_min(e, "model.linear_conv_kernel_dim", m.linear_conv_kernel_dim, 1);
         check_min(e, "model.linear_key_head_dim", m.linear_key_head_dim, 1);
         check_min(e, "model.linear_value_head_dim", m.linear_value_head_dim, 1);
         check_min(e, "model.linear_num_key_heads", m.linear_num_key_heads, 1);
         check_min(e, "model.linear_num_value_heads", m.linear_num_value_heads, 1);
       }},
      {"model.gdn_pattern_values", true, [](const Config& c, Emit& e) {
         const auto& p = c.model.linear_attention_pattern;
         for (size_t i = 0; i < p.size(); ++i)
           if (p[i] != 0 && p[i] != 1)
             e("model.linear_attention_pattern[" + std::to_string(i) + "] = " + num(p[i]) +
                   " must be 1 (gated delta net) or 0 (self-attention)",
               {"model.linear_attention_pattern"});
       }},
      {"model.num_layers_limit", true, [](const Config& c, Emit& e) {
         check_max(e, "model.num_layers", c.model.num_layers, limits::kMaxLayers);
       }},
      {"model.activation", true, [](const Config& c, Emit& e) {
         if (c.model.activation != "gelu" && c.model.activation != "swiglu")
           e("model.activation = '" + c.model.activation + "' must be gelu or swiglu",
             {"model.activation"});
       }},
      {"model.activation_dtype", true, [](const Config& c, Emit& e) {
         DType t = c.model.activation_dtype;
         if (t != DType::bf16 && t != DType::f32 && t != DType::f64)
           e("model.activation_dtype = " + std::string(dtype_name(t)) + " must be bf16, f32 or f64",
             {"model.activation_dtype"});
       }},
      {"model.dropout_range", true, [](const Config& c, Emit& e) {
         // 1.0 would drop everything and divide by zero in the 1/(1-p) scale.
         for (auto [name, p] : {std::pair{"model.attention_dropout", c.model.attention_dropout},
                                std::pair{"model.hidden_dropout", c.model.hidden_dropout}})
           if (!(p >= 0.0 && p < 1.0)) e(std::string(name) + " = " + num(p) + " must be in [0, 1)", {name});
       }},
      {"model.layernorm_epsilon", true, [](const Config& c, Emit& e) {
         double eps = c.model.layernorm_epsilon;
         if (!(eps > 0.0 && std::isfinite(eps)))
           e("model.layernorm_epsilon = " + num(eps) + " must be finite and > 0", {"model.layernorm_epsilon"});
       }},
      {"model.moe_sizes", true, [](const Config& c, Emit& e) {
         check_min(e, "model.num_moe_experts", c.model.num_moe_experts, 0);
         check_min(e, "model.moe_router_topk", c.model.moe_router_topk, 1);
         check_min(e, "model.moe_shared_expert_intermediate_size",
                   c.model.moe_shared_expert_intermediate_size, 0);
         check_min(e, "model.moe_ffn_hidden_size", c.model.moe_ffn_hidden_size, 0);
         check_min(e, "model.moe_layer_freq", c.model.moe_layer_freq, 1);
         if (!(c.model.moe_expert_dropout >= 0 && c.model.moe_expert_dropout < 1))
           e("model.moe_expert_dropout = " + std::to_string(c.model.moe_expert_dropout) + " must be in [0, 1)",
             {"model.moe_expert_dropout"});
         if (!(c.model.moe_aux_loss_coeff >= 0))
           e("model.moe_aux_loss_coeff = " + std::to_string(c.model.moe_aux_loss_coeff) + " must be >= 0",
             {"model.moe_aux_loss_coeff"});
       }},
      {"mla.sizes", true, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         check_min(e, "model.q_lora_rank", m.q_lora_rank, 0);
         check_min(e, "model.kv_lora_rank", m.kv_lora_rank, 1);
         check_min(e, "model.qk_head_dim", m.qk_head_dim, 1);
         check_min(e, "model.qk_pos_emb_head_dim", m.qk_pos_emb_head_dim, 1);
         check_min(e, "model.v_head_dim", m.v_head_dim, 1);
         if (!(m.rotary_base > 1.0 && std::isfinite(m.rotary_base)))
           e("model.rotary_base = " + num(m.rotary_base) + " must be finite and > 1", {"model.rotary_base"});
       }},
      {"parallel.size_range", true, [](const Config& c, Emit& e) {
         const auto& p = c.parallel;
         check_min(e, "parallel.tensor_model_parallel_size", p.tensor_model_parallel_size, 1);
         check_min(e, "parallel.pipeline_model_parallel_size", p.pipeline_model_parallel_size, 1);
         check_min(e, "parallel.expert_model_parallel_size", p.expert_model_parallel_size, 1);
         check_min(e, "parallel.expert_tensor_parallel_size", p.expert_tensor_parallel_size, 1);
       }},
      {"pipeline.num_layers_divisible", false, [](const Config& c, Emit& e) {
         // num_layers is the whole model (design §16): every stage gets num_layers / pp.
         const int pp = c.parallel.pipeline_model_parallel_size;
         if (pp > 1 && c.model.num_layers % pp != 0)
           e("model.num_layers = " + num(c.model.num_layers) + " is not divisible by parallel.pipeline_model_parallel_size = " +
                 num(pp) + " (every stage holds num_layers / pp layers)",
             {"model.num_layers", "parallel.pipeline_model_parallel_size"});
       }},
      {"run.range", true, [](const Config& c, Emit& e) {
         check_min(e, "run.micro_batches", c.run.micro_batches, 1);
         check_min(e, "run.steps", c.run.steps, 1);
       }},
      {"run.limit", true, [](const Config& c, Emit& e) {
         check_max(e, "run.micro_batches", c.run.micro_batches, limits::kMaxMicroBatches);
         check_max(e, "run.steps", c.run.steps, limits::kMaxSteps);
       }},
      {"recompute.granularity", true, [](const Config& c, Emit& e) {
         const auto& g = c.recompute.recompute_granularity;
         if (g && *g != "full" && *g != "selective")
           e("recompute.recompute_granularity = '" + *g + "' must be full, selective or unset",
             {"recompute.recompute_granularity"});
       }},
      {"recompute.method", true, [](const Config& c, Emit& e) {
         const auto& m = c.recompute.recompute_method;
         if (m && *m != "uniform" && *m != "block")
           e("recompute.recompute_method = '" + *m + "' must be uniform, block or unset",
             {"recompute.recompute_method"});
       }},
      {"recompute.unknown_module", true, [](const Config& c, Emit& e) {
         check_names(e, "recompute.recompute_modules", c.recompute.recompute_modules,
                     recompute_module_names());
       }},
      {"recompute.duplicate_module", true, [](const Config& c, Emit& e) {
         check_unique(e, "recompute.recompute_modules", c.recompute.recompute_modules);
       }},
      {"offload.unknown_module", true, [](const Config& c, Emit& e) {
         check_names(e, "offload.offload_modules", c.offload.offload_modules, offload_module_names());
       }},
      {"offload.duplicate_module", true, [](const Config& c, Emit& e) {
         check_unique(e, "offload.offload_modules", c.offload.offload_modules);
       }},
      {"offload.min_size_negative", true, [](const Config& c, Emit& e) {
         if (c.offload.min_offloaded_tensor_size < 0)
           e("offload.min_offloaded_tensor_size = " + num(c.offload.min_offloaded_tensor_size) +
                 " must be >= 0 (elements)",
             {"offload.min_offloaded_tensor_size"});
         check_min(e, "offload.max_inflight_offloads", c.offload.max_inflight_offloads, 0);
         if (!(c.offload.link_bandwidth_gbps >= 0) || !(c.offload.link_latency_us >= 0))
           e("offload.link_bandwidth_gbps = " + std::to_string(c.offload.link_bandwidth_gbps) +
                 " and offload.link_latency_us = " + std::to_string(c.offload.link_latency_us) + " must be >= 0",
             {"offload.link_bandwidth_gbps", "offload.link_latency_us"});
       }},

      {"offload.link_bounds", true, [](const Config& c, Emit& e) {
         // The link model sleeps latency + bytes / bandwidth per copy: a tiny bandwidth
         // or a huge latency turns a run into a hang.
         const double bw = c.offload.link_bandwidth_gbps, lat = c.offload.link_latency_us;
         if (bw > 0 && bw < limits::kMinLinkBandwidthGbps)
           e("offload.link_bandwidth_gbps = " + num(bw) + " must be 0 (strict streams) or >= " +
                 num(limits::kMinLinkBandwidthGbps),
             {"offload.link_bandwidth_gbps"});
         if (lat > limits::kMaxLinkLatencyUs)
           e("offload.link_latency_us = " + num(lat) + " must be <= " + num(limits::kMaxLinkLatencyUs),
             {"offload.link_latency_us"});
       }},

      // Model shape and parallel layout.
      {"model.hidden_divisible_by_heads", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads != 0)
           e("model.hidden_size = " + num(m.hidden_size) + " must be divisible by model.num_attention_heads = " +
                 num(m.num_attention_heads),
             {"model.hidden_size", "model.num_attention_heads"});
       }},
      {"mla.pos_emb_dim_even", false, [](const Config& c, Emit& e) {
         // RoPE rotates pairs of elements; an odd part has an element without a partner.
         const auto& m = c.model;
         if (m.multi_latent_attention && m.qk_pos_emb_head_dim % 2 != 0)
           e("model.qk_pos_emb_head_dim = " + num(m.qk_pos_emb_head_dim) +
                 " must be even with model.multi_latent_attention = true (RoPE rotates pairs)",
             {"model.qk_pos_emb_head_dim", "model.multi_latent_attention"});
       }},
      {"parallel.sp_needs_tp", false, [](const Config& c, Emit& e) {
         // Megatron silently turns SP off at TP = 1; rcts says so instead.
         if (c.parallel.sequence_parallel && c.parallel.tensor_model_parallel_size == 1)
           e("parallel.sequence_parallel = true needs parallel.tensor_model_parallel_size > 1 (is 1)",
             {"parallel.sequence_parallel", "parallel.tensor_model_parallel_size"});
       }},
      {"parallel.heads_divisible_by_tp", false, [](const Config& c, Emit& e) {
         int t = c.parallel.tensor_model_parallel_size;
         if (t > 0 && c.model.num_attention_heads % t != 0)
           e("model.num_attention_heads = " + num(c.model.num_attention_heads) +
                 " must be divisible by parallel.tensor_model_parallel_size = " + num(t),
             {"model.num_attention_heads", "parallel.tensor_model_parallel_size"});
       }},
      {"parallel.ffn_divisible_by_tp", false, [](const Config& c, Emit& e) {
         int t = c.parallel.tensor_model_parallel_size;
         if (t > 0 && c.model.ffn_hidden_size % t != 0)
           e("model.ffn_hidden_size = " + num(c.model.ffn_hidden_size) +
                 " must be divisible by parallel.tensor_model_parallel_size = " + num(t),
             {"model.ffn_hidden_size", "parallel.tensor_model_parallel_size"});
       }},
      {"parallel.seq_divisible_by_tp", false, [](const Config& c, Emit& e) {
         int t = c.parallel.tensor_model_parallel_size;
         if (c.parallel.sequence_parallel && t > 0 && c.model.seq_length % t != 0)
           e("model.seq_length = " + num(c.model.seq_length) +
                 " must be divisible by parallel.tensor_model_parallel_size = " + num(t) +
                 " with parallel.sequence_parallel = true",
             {"model.seq_length", "parallel.tensor_model_parallel_size", "parallel.sequence_parallel"});
       }},
      {"moe.topk_le_experts", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (m.num_moe_experts > 0 && m.moe_router_topk > m.num_moe_experts)
           e("model.moe_router_topk = " + num(m.moe_router_topk) + " must be <= model.num_moe_experts = " +
                 num(m.num_moe_experts),
             {"model.moe_router_topk", "model.num_moe_experts"});
       }},
      {"moe.experts_divisible_by_ep", false, [](const Config& c, Emit& e) {
         int ep = c.parallel.expert_model_parallel_size;
         if (c.model.num_moe_experts > 0 && ep > 0 && c.model.num_moe_experts % ep != 0)
           e("model.num_moe_experts = " + num(c.model.num_moe_experts) +
                 " must be divisible by parallel.expert_model_parallel_size = " + num(ep),
             {"model.num_moe_experts", "parallel.expert_model_parallel_size"});
       }},
      {"moe.expert_parallel_needs_moe", false, [](const Config& c, Emit& e) {
         const auto& p = c.parallel;
         if (c.model.num_moe_experts == 0 && (p.expert_model_parallel_size > 1 || p.expert_tensor_parallel_size > 1))
           e("parallel.expert_model_parallel_size = " + num(p.expert_model_parallel_size) +
                 " / expert_tensor_parallel_size = " + num(p.expert_tensor_parallel_size) +
                 " > 1 needs model.num_moe_experts > 0 (is 0)",
             {"parallel.expert_model_parallel_size", "parallel.expert_tensor_parallel_size",
              "model.num_moe_experts"});
       }},
      {"moe.shared_overlap_needs_shared", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (m.moe_shared_expert_overlap && (m.num_moe_experts == 0 || m.moe_shared_expert_intermediate_size == 0))
           e("model.moe_shared_expert_overlap = true needs shared experts (model.num_moe_experts = " +
                 num(m.num_moe_experts) + ", model.moe_shared_expert_intermediate_size = " +
                 num(m.moe_shared_expert_intermediate_size) + ")",
             {"model.moe_shared_expert_overlap", "model.moe_shared_expert_intermediate_size"});
       }},
      {"moe.ep_overlap_needs_ep", false, [](const Config& c, Emit& e) {
         if (c.model.overlap_moe_expert_parallel_comm &&
             (c.model.num_moe_experts == 0 || c.parallel.expert_model_parallel_size < 2))
           e("model.overlap_moe_expert_parallel_comm = true needs MoE with parallel.expert_model_parallel_size > 1 "
             "(num_moe_experts = " + num(c.model.num_moe_experts) + ", expert_model_parallel_size = " +
                 num(c.parallel.expert_model_parallel_size) + ")",
             {"model.overlap_moe_expert_parallel_comm", "parallel.expert_model_parallel_size"});
       }},

      // Recompute.
      {"recompute.full_needs_method", false, [](const Config& c, Emit& e) {
         if (is_full(c) && !c.recompute.recompute_method)
           e("recompute.recompute_granularity = full needs recompute.recompute_method (uniform or block), is unset",
             {"recompute.recompute_method", "recompute.recompute_granularity"});
       }},
      {"recompute.num_layers_range", false, [](const Config& c, Emit& e) {
         // Megatron checks only "is set": N = 0 loops forever with uniform.
         if (!is_full(c)) return;
         const auto& n = c.recompute.recompute_num_layers;
         // Layers per pipeline stage (design §16); num_layers itself at pp = 1.
         const int pp = c.parallel.pipeline_model_parallel_size;
         const int L = pp > 1 ? c.model.num_layers / pp : c.model.num_layers;
         if (!n || *n < 1 || *n > L)
           e("recompute.recompute_num_layers = " + opt(n) + " must be in [1, " +
                 (pp > 1 ? "layers per stage = " : "num_layers = ") + num(L) + "] for recompute_granularity = full",
             {"recompute.recompute_num_layers", "model.num_layers"});
       }},
      {"recompute.selective_forbids_num_layers", false, [](const Config& c, Emit& e) {
         if (c.recompute.recompute_granularity == "selective" && c.recompute.recompute_num_layers)
           e("recompute.recompute_num_layers = " + opt(c.recompute.recompute_num_layers) +
                 " must be unset for recompute_granularity = selective",
             {"recompute.recompute_num_layers", "recompute.recompute_granularity"});
       }},
      {"recompute.selective_forbids_method", false, [](const Config& c, Emit& e) {
         if (c.recompute.recompute_granularity == "selective" && c.recompute.recompute_method)
           e("recompute.recompute_method = " + opt(c.recompute.recompute_method) +
                 " must be unset for recompute_granularity = selective",
             {"recompute.recompute_method", "recompute.recompute_granularity"});
       }},
      {"recompute.options_need_granularity", false, [](const Config& c, Emit& e) {
         const auto& r = c.recompute;
         if (!r.recompute_granularity && (r.recompute_method || r.recompute_num_layers))
           e("recompute.recompute_method = " + opt(r.recompute_method) + " / recompute_num_layers = " +
                 opt(r.recompute_num_layers) + " set without recompute.recompute_granularity",
             {"recompute.recompute_granularity", "recompute.recompute_method", "recompute.recompute_num_layers"});
       }},
      {"recompute.moe_layer_recompute_vs_full", false, [](const Config& c, Emit& e) {
         if (c.recompute.moe_layer_recompute && is_full(c))
           e("recompute.moe_layer_recompute = true (deprecated: selective + moe) conflicts with "
             "recompute_granularity = full",
             {"recompute.moe_layer_recompute", "recompute.recompute_granularity"});
       }},
      {"recompute.moe_needs_moe", false, [](const Config& c, Emit& e) {
         if (contains(selective_modules(c), "moe") && c.model.num_moe_experts == 0)
           e("recompute.recompute_modules contains 'moe' but model.num_moe_experts = 0",
             {"recompute.recompute_modules", "model.num_moe_experts"});
       }},
      {"recompute.mlp_needs_dense", false, [](const Config& c, Emit& e) {
         // Every layer is MoE when num_moe_experts > 0 and moe_layer_freq == 1: "mlp"
         // would recompute nothing.
         if (contains(selective_modules(c), "mlp") && c.model.num_moe_experts > 0 && c.model.moe_layer_freq == 1)
           e("recompute.recompute_modules contains 'mlp' but every layer is MoE (model.num_moe_experts = " +
                 num(c.model.num_moe_experts) + "); use 'moe' or 'shared_experts'",
             {"recompute.recompute_modules", "model.num_moe_experts"});
       }},
      {"recompute.shared_experts_needs_shared", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (contains(selective_modules(c), "shared_experts") &&
             (m.num_moe_experts == 0 || m.moe_shared_expert_intermediate_size == 0))
           e("recompute.recompute_modules contains 'shared_experts' but the model has none (num_moe_experts = " +
                 num(m.num_moe_experts) + ", moe_shared_expert_intermediate_size = " +
                 num(m.moe_shared_expert_intermediate_size) + ")",
             {"recompute.recompute_modules", "model.moe_shared_expert_intermediate_size"});
       }},
      {"recompute.moe_act_needs_moe", false, [](const Config& c, Emit& e) {
         if (contains(selective_modules(c), "moe_act") && c.model.num_moe_experts == 0)
           e("recompute.recompute_modules contains 'moe_act' but model.num_moe_experts = 0",
             {"recompute.recompute_modules", "model.num_moe_experts"});
       }},
      {"recompute.moe_act_needs_grouped_gemm", false, [](const Config& c, Emit& e) {
         if (contains(selective_modules(c), "moe_act") && !c.model.moe_grouped_gemm)
           e("recompute.recompute_modules contains 'moe_act' but model.moe_grouped_gemm = false",
             {"recompute.recompute_modules", "model.moe_grouped_gemm"});
       }},
      {"recompute.mla_up_proj_needs_mla", false, [](const Config& c, Emit& e) {
         if (contains(selective_modules(c), "mla_up_proj") && !c.model.multi_latent_attention)
           e("recompute.recompute_modules contains 'mla_up_proj' but model.multi_latent_attention = false",
             {"recompute.recompute_modules", "model.multi_latent_attention"});
       }},
      {"model.gdn_pattern_missing", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (m.gated_delta_net && m.linear_attention_freq == 0 && m.linear_attention_pattern.empty())
           e("model.gated_delta_net = true needs the layer pattern: model.linear_attention_freq or "
             "model.linear_attention_pattern",
             {"model.linear_attention_freq", "model.gated_delta_net"});
       }},
      {"model.gdn_pattern_both", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (m.linear_attention_freq != 0 && !m.linear_attention_pattern.empty())
           e("model.linear_attention_freq and model.linear_attention_pattern are both given; give one",
             {"model.linear_attention_pattern", "model.linear_attention_freq"});
       }},
      {"model.gdn_pattern_length", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (!m.linear_attention_pattern.empty() &&
             static_cast<int64_t>(m.linear_attention_pattern.size()) != m.num_layers)
           e("model.linear_attention_pattern has " + num(static_cast<int64_t>(m.linear_attention_pattern.size())) +
                 " entries for model.num_layers = " + num(m.num_layers),
             {"model.linear_attention_pattern", "model.num_layers"});
       }},
      {"model.gdn_value_heads_multiple", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         if (m.gated_delta_net && m.linear_num_key_heads > 0 && m.linear_num_value_heads % m.linear_num_key_heads != 0)
           e("model.linear_num_value_heads = " + num(m.linear_num_value_heads) +
                 " must be a multiple of model.linear_num_key_heads = " + num(m.linear_num_key_heads),
             {"model.linear_num_value_heads", "model.linear_num_key_heads"});
       }},
      {"model.gdn_heads_vs_tp", false, [](const Config& c, Emit& e) {
         const auto& m = c.model;
         const int t = c.parallel.tensor_model_parallel_size;
         if (m.gated_delta_net && t > 0 && (m.linear_num_key_heads % t != 0 || m.linear_num_value_heads % t != 0))
           e("model.linear_num_key_heads = " + num(m.linear_num_key_heads) + " and model.linear_num_value_heads = " +
                 num(m.linear_num_value_heads) + " must both be multiples of parallel.tensor_model_parallel_size = " +
                 num(t),
             {"model.linear_num_key_heads", "parallel.tensor_model_parallel_size"});
       }},
      {"recompute.gdn_norm_out_needs_gdn", false, [](const Config& c, Emit& e) {
         if (contains(selective_modules(c), "gdn_norm_out") && !c.model.gated_delta_net)
           e("recompute.recompute_modules contains 'gdn_norm_out' but model.gated_delta_net = false",
             {"recompute.recompute_modules", "model.gated_delta_net"});
       }},
      {"recompute.shared_experts_vs_overlap", false, [](const Config& c, Emit& e) {
         if (contains(selective_modules(c), "shared_experts") && c.model.moe_shared_expert_overlap)
           e("recompute.recompute_modules contains 'shared_experts', which excludes "
             "model.moe_shared_expert_overlap = true",
             {"recompute.recompute_modules", "model.moe_shared_expert_overlap"});
       }},
      {"recompute.ep_overlap_vs_full", false, [](const Config& c, Emit& e) {
         if (c.model.overlap_moe_expert_parallel_comm && is_full(c))
           e("model.overlap_moe_expert_parallel_comm = true excludes recompute.recompute_granularity = full",
             {"model.overlap_moe_expert_parallel_comm", "recompute.recompute_granularity"});
       }},
      {"recompute.ep_overlap_vs_moe", false, [](const Config& c, Emit& e) {
         if (c.model.overlap_moe_expert_parallel_comm && contains(selective_modules(c), "moe"))
           e("model.overlap_moe_expert_parallel_comm = true excludes recompute module 'moe'",
             {"model.overlap_moe_expert_parallel_comm", "recompute.recompute_modules"});
       }},

      // distribute_saved_activations.
      {"distribute.needs_tp", false, [](const Config& c, Emit& e) {
         if (c.recompute.distribute_saved_activations && c.parallel.tensor_model_parallel_size < 2)
           e("recompute.distribute_saved_activations = true needs parallel.tensor_model_parallel_size > 1 (is " +
                 num(c.parallel.tensor_model_parallel_size) + ")",
             {"recompute.distribute_saved_activations", "parallel.tensor_model_parallel_size"});
       }},
      {"distribute.needs_full", false, [](const Config& c, Emit& e) {
         if (c.recompute.distribute_saved_activations && !is_full(c))
           e("recompute.distribute_saved_activations = true needs recompute_granularity = full (is " +
                 opt(c.recompute.recompute_granularity) + ")",
             {"recompute.distribute_saved_activations", "recompute.recompute_granularity"});
       }},
      {"distribute.needs_method", false, [](const Config& c, Emit& e) {
         if (c.recompute.distribute_saved_activations && !c.recompute.recompute_method)
           e("recompute.distribute_saved_activations = true needs recompute.recompute_method (is unset)",
             {"recompute.distribute_saved_activations", "recompute.recompute_method"});
       }},
      {"distribute.excludes_sp", false, [](const Config& c, Emit& e) {
         if (c.recompute.distribute_saved_activations && c.parallel.sequence_parallel)
           e("recompute.distribute_saved_activations = true excludes parallel.sequence_parallel = true",
             {"recompute.distribute_saved_activations", "parallel.sequence_parallel"});
       }},

      // Layer-level CPU offloading.
      {"cpu_offloading.num_layers_range", false, [](const Config& c, Emit& e) {
         int n = c.offload.cpu_offloading_num_layers, L = c.model.num_layers;
         if (c.offload.cpu_offloading && (n < 0 || n >= L))
           e("offload.cpu_offloading_num_layers = " + num(n) + " must be in [0, num_layers = " + num(L) + ")",
             {"offload.cpu_offloading_num_layers", "model.num_layers"});
       }},
      {"cpu_offloading.excludes_pp", false, [](const Config& c, Emit& e) {
         if (c.offload.cpu_offloading && c.parallel.pipeline_model_parallel_size > 1)
           e("offload.cpu_offloading = true excludes parallel.pipeline_model_parallel_size = " +
                 num(c.parallel.pipeline_model_parallel_size),
             {"offload.cpu_offloading", "parallel.pipeline_model_parallel_size"});
       }},
      {"cpu_offloading.excludes_recompute", false, [](const Config& c, Emit& e) {
         if (c.offload.cpu_offloading && any_recompute(c))
           e("offload.cpu_offloading = true excludes recompute (recompute_granularity = " +
                 opt(c.recompute.recompute_granularity) + ", moe_layer_recompute = " +
                 flag(c.recompute.moe_layer_recompute) + ")",
             {"offload.cpu_offloading", "recompute.recompute_granularity"});
       }},
      {"cpu_offloading.excludes_fine_grained", false, [](const Config& c, Emit& e) {
         if (c.offload.cpu_offloading && c.offload.fine_grained_activation_offloading)
           e("offload.cpu_offloading = true excludes offload.fine_grained_activation_offloading = true",
             {"offload.cpu_offloading", "offload.fine_grained_activation_offloading"});
       }},

      // Fine-grained activation offload.
      {"offload.modules_empty", false, [](const Config& c, Emit& e) {
         if (c.offload.fine_grained_activation_offloading && c.offload.offload_modules.empty())
           e("offload.fine_grained_activation_offloading = true needs a non-empty offload.offload_modules",
             {"offload.offload_modules", "offload.fine_grained_activation_offloading"});
       }},
      {"offload.attn_proj_needs_core_attn", false, [](const Config& c, Emit& e) {
         // attn_proj's input is core_attn's output, which core_attn's backward needs too.
         const auto& m = c.offload.offload_modules;
         if (c.offload.fine_grained_activation_offloading && contains(m, "attn_proj") && !contains(m, "core_attn"))
           e("offload.offload_modules contains 'attn_proj' without 'core_attn'", {"offload.offload_modules"});
       }},
      {"offload.expert_module_needs_moe", false, [](const Config& c, Emit& e) {
         if (!c.offload.fine_grained_activation_offloading || c.model.num_moe_experts > 0) return;
         for (const char* n : {"expert_fc1", "moe_act"})
           if (contains(c.offload.offload_modules, n))
             e("offload.offload_modules contains '" + std::string(n) + "' but model.num_moe_experts = 0",
               {"offload.offload_modules", "model.num_moe_experts"});
       }},
  };
  return table;
}

std::vector<ConfigIssue> run_rules(const Config& cfg, bool field_level_only) {
  std::vector<ConfigIssue> out;
  for (const Rule& r : rules()) {
    if (field_level_only && !r.field_level) continue;
    Emit e(r.code, out);
    r.check(cfg, e);
  }
  for (auto& i : fp8_graph_issues(cfg, field_level_only)) out.push_back(std::move(i));
  return out;
}

std::string describe(const std::vector<ConfigIssue>& issues) {
  std::string s;
  for (const auto& i : issues) s += "\n  [" + i.code + "] " + i.message;
  return s;
}

}  // namespace

const std::vector<std::string>& recompute_module_names() {
  static const std::vector<std::string> names = {"core_attn", "mlp", "moe", "shared_experts",
                                                 "layernorm", "moe_act", "mla_up_proj", "gdn_norm_out"};
  return names;
}

const std::vector<std::string>& offload_module_names() {
  static const std::vector<std::string> names = {"attn_norm", "qkv_linear", "core_attn", "attn_proj",
                                                 "mlp_norm", "expert_fc1", "moe_act"};
  return names;
}

RecomputeConfig effective_recompute(const RecomputeConfig& r) {
  RecomputeConfig out = r;
  if (!r.moe_layer_recompute || r.recompute_granularity == "full") return out;
  out.moe_layer_recompute = false;
  out.recompute_granularity = "selective";
  if (!contains(out.recompute_modules, "moe")) out.recompute_modules.push_back("moe");
  return out;
}

std::vector<ConfigIssue> validate(const Config& cfg) { return run_rules(cfg, false); }
std::vector<ConfigIssue> validate_fields(const Config& cfg) { return run_rules(cfg, true); }

void validate_or_throw(const Config& cfg, const std::string& where) {
  auto issues = validate(cfg);
  if (issues.empty()) return;
  const ConfigIssue& first = issues.front();
  std::string path = first.fields.empty() ? "" : field_to_json_path(first.fields.front());
  std::string code = first.code;
  std::string msg = where + ": invalid config (" + std::to_string(issues.size()) + " issue" +
                    (issues.size() == 1 ? "" : "s") + "):" + describe(issues);
  throw ConfigError(std::move(code), std::move(path), msg, std::move(issues));
}

std::vector<std::string> all_rule_codes() {
  std::vector<std::string> codes;
  for (const Rule& r : rules()) codes.emplace_back(r.code);
  for (auto& code : fp8_graph_rule_codes()) codes.push_back(std::move(code));
  return codes;
}

}  // namespace rcts
