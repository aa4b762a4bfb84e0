// Checkpoint-segment optimum and recompute FLOP overhead.
#include "reference/memory_model/checkpoint_math.hpp"

#include <algorithm>
#include <cmath>

#include "reference/config/pipeline_stage.hpp"
#include "reference/config/validate.hpp"
#include "reference/memory_model/checked_math.hpp"
#include "reference/core/error.hpp"

namespace rcts {

int64_t checkpoint_peak(int L, int k, int64_t A, int64_t c) {
  RCTS_CHECK(L >= 1 && k >= 1 && k <= L, "checkpoint_peak: need 1 <= k <= L (k=" + std::to_string(k) +
                                             " L=" + std::to_string(L) + ")");
  const int64_t seg = (L + k - 1) / k;
  return checked_add(checked_mul(k, c, "k*c"), checked_mul(seg, A, "ceil(L/k)*A"), "checkpoint peak");
}

CheckpointOptimum checkpoint_optimum(int L, int64_t A, int64_t c) {
  RCTS_CHECK(L >= 1 && A > 0 && c > 0, "checkpoint_optimum: need L >= 1, A > 0, c > 0 (L=" + std::to_string(L) +
                                           " A=" + std::to_string(A) + " c=" + std::to_string(c) + ")");
  CheckpointOptimum o;
  const double l = L, a = static_cast<double>(A), cc = static_cast<double>(c);
  o.k_star = std::sqrt(l * a / cc);
  o.peak_at_k_star = 2.0 * std::sqrt(l * a * cc);
  o.peak_best = checkpoint_peak(L, 1, A, c);
  for (int k = 2; k <= L; ++k) {  // strict <: the smallest k wins ties
    const int64_t p = checkpoint_peak(L, k, A, c);
    if (p < o.peak_best) {
      o.peak_best = p;
      o.k_best = k;
    }
  }
  o.layers_per_segment = (L + o.k_best - 1) / o.k_best;
  return o;
}

LayerFlops layer_flops(const MemoryDims& m) {
  LayerFlops f;
  const int64_t sbh = m.sbh();
  f.qkv = checked_product({2, sbh, 3, m.h}, "qkv FLOPs");
  f.scores = checked_product({2, m.b, m.s, m.s, m.h}, "attention score FLOPs");
  f.context = f.scores;
  f.proj = checked_product({2, sbh, m.h}, "projection FLOPs");
  f.fc1 = checked_product({2, sbh, m.ffn, m.swiglu ? 2 : 1}, "fc1 FLOPs");
  f.fc2 = checked_product({2, sbh, m.ffn}, "fc2 FLOPs");
  return f;
}

LayerFlops layer_flops_of(const Config& c, int layer) {
  const MemoryDims m = MemoryDims::from(c);
  LayerFlops f = layer_flops(m);
  const int64_t sb = checked_mul(m.s, m.b, "s*b");
  if (c.gdn_layer(layer)) {
    const auto& g = c.model;
    const int64_t qk = checked_mul(g.linear_num_key_heads, g.linear_key_head_dim, "GDN key width");
    const int64_t vz = checked_mul(g.linear_num_value_heads, g.linear_value_head_dim, "GDN value width");
    const int64_t width = checked_add(checked_mul(2, checked_add(qk, vz, "GDN width"), "GDN width"),
                                      checked_mul(2, g.linear_num_value_heads, "GDN width"), "GDN width");
    f.qkv = checked_product({2, sb, m.h, width}, "GDN in_proj FLOPs");
    f.scores = f.context = 0;
    f.recurrence = checked_product({6, sb, g.linear_num_value_heads, g.linear_key_head_dim, g.linear_value_head_dim},
                                   "GDN recurrence FLOPs");
    f.proj = checked_product({2, sb, vz, m.h}, "GDN out_proj FLOPs");
  } else if (m.mla) {
    const int64_t dq = checked_add(m.mla_qk_head_dim, m.mla_qk_pos_emb_head_dim, "MLA dq");
    const int64_t q_in = m.mla_q_lora_rank > 0 ? m.mla_q_lora_rank : m.h;
    const int64_t q_up = checked_product({2, sb, q_in, m.a, dq}, "MLA q up FLOPs");
    const int64_t kv_up =
        checked_product({2, sb, m.mla_kv_lora_rank, m.a, checked_add(m.mla_qk_head_dim, m.mla_v_head_dim, "MLA")},
                        "MLA kv up FLOPs");
    const int64_t q_down = m.mla_q_lora_rank > 0 ? checked_product({2, sb, m.h, m.mla_q_lora_rank}, "MLA q down FLOPs") : 0;
    const int64_t kv_down = checked_product(
        {2, sb, m.h, checked_add(m.mla_kv_lora_rank, m.mla_qk_pos_emb_head_dim, "MLA")}, "MLA kv down FLOPs");
    f.up_proj = checked_add(q_up, kv_up, "MLA up-projection FLOPs");
    f.replicated = checked_add(q_down, kv_down, "MLA FLOPs");
    f.qkv = checked_add(checked_add(q_down, kv_down, "MLA FLOPs"), f.up_proj, "MLA FLOPs");
    f.scores = checked_product({2, m.b, m.s, m.s, m.a, dq}, "MLA score FLOPs");
    f.context = checked_product({2, m.b, m.s, m.s, m.a, m.mla_v_head_dim}, "MLA context FLOPs");
    f.proj = checked_product({2, sb, m.a, m.mla_v_head_dim, m.h}, "MLA projection FLOPs");
  }
  return f;
}

int64_t LayerFlops::core_attn() const { return checked_add(scores, context, "core attention FLOPs"); }
int64_t LayerFlops::mlp() const { return checked_add(fc1, fc2, "MLP FLOPs"); }
int64_t LayerFlops::total() const {
  return checked_add(checked_add(checked_add(checked_add(qkv, proj, "layer FLOPs"), core_attn(), "layer FLOPs"), mlp(),
                                 "layer FLOPs"),
                     recurrence, "layer FLOPs");
}

namespace {
// Matmul FLOPs that selective `modules` recompute in one layer of FLOPs f. layernorm and
// gdn_norm_out recompute norms only; mla_up_proj is 0 outside MLA layers.
int64_t selective_recompute_flops(const LayerFlops& f, const std::vector<std::string>& modules) {
  int64_t n = 0;
  for (const auto& name : modules) {
    if (name == "core_attn") n = checked_add(n, f.core_attn(), "recompute FLOPs");
    else if (name == "mlp") n = checked_add(n, f.mlp(), "recompute FLOPs");
    else if (name == "mla_up_proj") n = checked_add(n, f.up_proj, "recompute FLOPs");
    else RCTS_CHECK(name == "layernorm" || name == "gdn_norm_out",
                    "recompute_overhead: module '" + name + "' is not modelled");
  }
  return n;
}

RecomputeOverhead finish(RecomputeOverhead o) {
  o.recompute_ratio = static_cast<double>(o.recompute_flops) / static_cast<double>(o.forward_flops);
  o.step_ratio = 1.0 + o.recompute_ratio / 3.0;
  return o;
}
}  // namespace

RecomputeOverhead recompute_overhead(const MemoryDims& m, int L, int full_layers,
                                     const std::vector<std::string>& selective) {
  RCTS_CHECK(L >= 1 && full_layers >= 0 && full_layers <= L && (full_layers == 0 || selective.empty()),
             "recompute_overhead: need 0 <= full_layers <= L and no selective modules with full recompute");
  const LayerFlops f = layer_flops(m);
  const int64_t per_layer = selective_recompute_flops(f, selective);
  RecomputeOverhead o;
  o.forward_flops = checked_mul(L, f.total(), "stage forward FLOPs");
  o.recompute_flops = checked_add(checked_mul(full_layers, f.total(), "recompute FLOPs"),
                                  checked_mul(L, per_layer, "recompute FLOPs"), "recompute FLOPs");
  return finish(o);
}

RecomputeOverhead recompute_overhead(const Config& c, int pp_rank) {
  validate_or_throw(c, "memory model");
  const RecomputeConfig r = effective_recompute(c.recompute);
  const StageLayers stage = stage_layers(c, pp_rank);  // this rank's stage (design §16)
  // Layers recomputed whole: uniform every layer, block the stage's first N.
  int full_layers = 0;
  if (r.recompute_granularity == "full")
    full_layers = r.recompute_method == "uniform" ? stage.count : *r.recompute_num_layers;
  const std::vector<std::string> none;
  const auto& selective = r.recompute_granularity == "selective" ? r.recompute_modules : none;
  RecomputeOverhead o;
  for (int i = 0; i < stage.count; ++i) {  // each layer by its kind (hybrid models)
    const LayerFlops f = layer_flops_of(c, stage.first + i);
    o.forward_flops = checked_add(o.forward_flops, f.total(), "stage forward FLOPs");
    const int64_t again = i < full_layers ? f.total() : selective_recompute_flops(f, selective);
    o.recompute_flops = checked_add(o.recompute_flops, again, "recompute FLOPs");
    if (i < full_layers) o.replicated_recompute_flops += f.replicated;  // <= recompute_flops: no overflow
  }
  return finish(o);
}

}  // namespace rcts
