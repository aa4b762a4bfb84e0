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

int64_t LayerFlops::core_attn() const { return checked_add(scores, context, "core attention FLOPs"); }
int64_t LayerFlops::mlp() const { return checked_add(fc1, fc2, "MLP FLOPs"); }
int64_t LayerFlops::total() const {
  return checked_add(checked_add(checked_add(qkv, proj, "layer FLOPs"), core_attn(), "layer FLOPs"), mlp(),
                     "layer FLOPs");
}

RecomputeOverhead recompute_overhead(const MemoryDims& m, int L, int full_layers,
                                     const std::vector<std::string>& selective) {
  RCTS_CHECK(L >= 1 && full_layers >= 0 && full_layers <= L && (full_layers == 0 || selective.empty()),
             "recompute_overhead: need 0 <= full_layers <= L and no selective modules with full recompute");
  const LayerFlops f = layer_flops(m);
  int64_t per_layer = 0;  // selective: matmul FLOPs recomputed in every layer
  for (const auto& name : selective) {
    if (name == "core_attn") per_layer = checked_add(per_layer, f.core_attn(), "recompute FLOPs");
    else if (name == "mlp") per_layer = checked_add(per_layer, f.mlp(), "recompute FLOPs");
    else RCTS_CHECK(name == "layernorm", "recompute_overhead: module '" + name + "' is not modelled");
    // layernorm recomputes no matmul
  }
  RecomputeOverhead o;
  o.forward_flops = checked_mul(L, f.total(), "stage forward FLOPs");
  o.recompute_flops = checked_add(checked_mul(full_layers, f.total(), "recompute FLOPs"),
                                  checked_mul(L, per_layer, "recompute FLOPs"), "recompute FLOPs");
  o.recompute_ratio = static_cast<double>(o.recompute_flops) / static_cast<double>(o.forward_flops);
  o.step_ratio = 1.0 + o.recompute_ratio / 3.0;
  return o;
}

RecomputeOverhead recompute_overhead(const Config& c) {
  validate_or_throw(c, "memory model");
  const RecomputeConfig r = effective_recompute(c.recompute);
  const MemoryDims m = MemoryDims::from(c);
  const int L = layers_per_stage(c);  // this rank's stage (design §16)
  if (r.recompute_granularity == "full")
    return recompute_overhead(m, L, r.recompute_method == "uniform" ? L : *r.recompute_num_layers, {});
  if (r.recompute_granularity == "selective") return recompute_overhead(m, L, 0, r.recompute_modules);
  return recompute_overhead(m, L, 0, {});
}

}  // namespace rcts
