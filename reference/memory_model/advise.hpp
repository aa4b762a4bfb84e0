// The recompute advisor (`rcts advise`, design §13): for one model, parallel layout and
// per-rank activation budget, every candidate recompute setting the memory model can
// price, with its bytes, its recompute cost and whether it fits; the cheapest fitting
// one is recommended.
//
// Candidates (dense, MLA and GDN/hybrid layers; the model covers no MoE):
//   selective []                    the empty control (nothing recomputed)
//   selective S                     every non-empty S ⊆ {core_attn, mlp, layernorm}, plus
//                                   mla_up_proj with MLA and gdn_norm_out with GDN layers
//   full uniform N, full block N    N = 1 .. L (L: layers of one pipeline stage, num_layers / pp)
// A candidate the validation rules reject for this config (e.g. layernorm under FP8
// delayed scaling, full recompute under per-layer CUDA graphs) is listed as invalid with
// the rule's code and never fits.
//
// Figures, per rank (per TP shard), from stage_memory / recompute_overhead:
//   peak_bytes      (P - 1) · stored + backward peak, P = min(pp, micro_batches) micro-
//                   batches in flight (1F1B, first stage): what the budget is compared with
//   stored_bytes    saved + checkpoint-input bytes one micro-batch keeps after its forward
//   recompute_flops extra forward matmul FLOPs per micro-batch on this rank: the model's
//                   recompute FLOPs (Korthikanti et al. 2022, matmuls only) divided by t
//                   (every term shards over TP but MLA's replicated down-projections);
//                   layernorm and gdn_norm_out recompute cost no matmul
//   step_ratio      (3F + R) / 3F, backward = 2 forwards
// Order: recompute_flops ascending, then the narrower setting (control 0, selective |S|,
// full |boundaries| + 1), then peak_bytes, then name. The recommendation is the first valid candidate
// whose peak_bytes <= budget; none when nothing fits. Bytes are activations only: the
// budget is what parameters, gradients, optimizer state and workspace leave over.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/config/config.hpp"

namespace rcts {

struct AdviceCandidate {
  std::string name;  // "selective [core_attn,mlp]", "full uniform 2", ...
  RecomputeConfig recompute;
  int width = 0;
  bool valid = true;
  std::string invalid_code;  // the first validation rule broken (valid == false)
  int64_t stored_bytes = 0, peak_backward_bytes = 0, peak_bytes = 0;
  int64_t recompute_flops = 0;
  double step_ratio = 1.0;
  bool fits = false;
};

struct Advice {
  Config base;
  int64_t budget_bytes = 0;
  int in_flight = 1;
  std::vector<AdviceCandidate> candidates;  // in the order above
  std::optional<size_t> recommended;        // index into candidates
};

// `base` must be valid (validate_or_throw) and dense without offload; `where` names the
// input in errors ("advise: <where>: model.num_moe_experts = 4: ..."). budget_bytes > 0.
Advice advise(const Config& base, int64_t budget_bytes, const std::string& where);
nlohmann::json advice_json(const Advice& a);
std::string advice_text(const Advice& a);

}  // namespace rcts
