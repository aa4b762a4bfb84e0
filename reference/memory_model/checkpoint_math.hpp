// Checkpoint-segment optimum and recompute FLOP overhead (Korthikanti et al. 2022 §4,
// Chen et al. 2016 sqrt(L) checkpointing). Matmul FLOPs only, as in the paper.
#pragma once
#include <cstdint>

#include "reference/config/config.hpp"
#include "reference/memory_model/activation_memory.hpp"

namespace rcts {

// L layers split into k checkpointed segments: k chunk inputs of c bytes stay, and one
// segment of ceil(L/k) layers of A bytes each is live while it is recomputed:
// peak(k) = k·c + ceil(L/k)·A. Continuous optimum k* = sqrt(L·A/c), peak 2·sqrt(L·A·c).
struct CheckpointOptimum {
  double k_star = 0;
  double peak_at_k_star = 0;  // 2·sqrt(L·A·c)
  int k_best = 1;             // integer k in [1, L] minimising peak(k) (smallest on ties)
  int layers_per_segment = 1; // ceil(L / k_best): the uniform recompute_num_layers to use
  int64_t peak_best = 0;
};
int64_t checkpoint_peak(int L, int k, int64_t A, int64_t c);
CheckpointOptimum checkpoint_optimum(int L, int64_t A, int64_t c);

// Forward matmul FLOPs of one whole layer (all TP ranks together), one micro-batch.
// GeLU, ffn = 4h: 24·bsh² + 4·bs²h.
struct LayerFlops {
  int64_t qkv = 0;      // 2·sbh·3h
  int64_t scores = 0;   // QK^T: 2·bs²h
  int64_t context = 0;  // x V:  2·bs²h
  int64_t proj = 0;     // 2·sbh·h
  int64_t fc1 = 0;      // 2·sbh·ffn (SwiGLU: 2·sbh·2ffn)
  int64_t fc2 = 0;      // 2·sb·ffn·h
  // MLA (design §14): qkv holds all four projections into heads; up_proj the part the
  // mla_up_proj region recomputes: q up-projection (or linear_q_proj) + kv up-projection.
  int64_t up_proj = 0;
  int64_t replicated = 0;  // MLA: the down-projections, which every TP rank runs whole
  // GDN layers (design §15): qkv is in_proj, proj out_proj, scores = context = 0, and the
  // gated delta rule's three dk×dv products per token and value head (kᵀS, the rank-1
  // update, qᵀS): 6·sb·Hv·dk·dv. gdn_norm_out recomputes no matmul.
  int64_t recurrence = 0;
  // Sums throw rcts::Error on int64 overflow, as layer_flops does.
  int64_t total() const;
  int64_t core_attn() const;
  int64_t mlp() const;
};
LayerFlops layer_flops(const MemoryDims& m);
// The same for global layer `layer` of c's model by its kind: dense attention, MLA or GDN.
LayerFlops layer_flops_of(const Config& c, int layer);

// Backward = 2 forwards, so a step without recompute costs 3F per layer.
struct RecomputeOverhead {
  int64_t forward_flops = 0;    // stage forward (L·F)
  int64_t recompute_flops = 0;  // extra forward work in backward
  int64_t replicated_recompute_flops = 0;  // the part of it every TP rank runs whole (MLA down-projections)
  double recompute_ratio = 0;   // recompute / forward (full: 1; core_attn ≈ s/(6h))
  double step_ratio = 1;        // (3F + R) / 3F (full: 4/3)
};
// Per layer of pipeline stage `pp_rank` (design §16), each by its kind.
RecomputeOverhead recompute_overhead(const Config& c, int pp_rank = 0);
// The same for an explicit plan: `full_layers` of the L layers fully recomputed, or the
// selective modules in every layer.
RecomputeOverhead recompute_overhead(const MemoryDims& m, int L, int full_layers,
                                     const std::vector<std::string>& selective);

}  // namespace rcts
