// MoE top-k router (a deterministic, simplified Megatron-LM TopKRouter).
//
// What it promises, for x (tokens, h) in the activation dtype and the router weight
// W (E, h), replicated on every rank (name-keyed init "<moe>.router.weight", so every
// rank, layout and backend holds the same values):
//   logits = x W^T            in the compute type (f32; f64 in gradcheck runs), by the
//                             GEMM's documented order (design §2)
// (the arithmetic below is the backend's: Ops::row_softmax_*, topk_select, aux_loss,
// topk_scatter, whose CPU definitions are the kernels' headers)
//   probs  = softmax(logits)  per token over the experts: m = max_e logits (scanned in
//                             expert order from e = 0), z_e = detmath::exp(l_e - m),
//                             Z = sum_e z_e (from 0, expert order), p_e = z_e / Z
//   top-k                     experts ordered by (prob descending, expert index
//                             ascending): equal probabilities go to the lower index.
//                             k = 0 is the best expert. No capacity, no token dropping.
//   combine weights           w[t][k] = probs[t][topk[t][k]]: the top-k probabilities
//                             themselves, NOT renormalised over the k chosen experts.
// Probabilities and weights stay in the compute type; they are never rounded to the
// activation dtype.
//
// Aux load-balancing loss (Switch Transformer form), over this rank's tokens only:
//   f_e = count_e / (tokens * k)      count_e = (token, k) assignments to expert e
//   P_e = (sum_t probs[t][e]) / tokens   (token order, from 0)
//   aux = (coeff * E) * sum_e (f_e * P_e)   (expert order, from 0), compute type
// recorded with rt.add_side_effect(<moe>.aux_loss, aux) in training forwards only
// (Runtime skips it while recomputing, so a recomputed MoE layer adds it once).
// Simplification: the aux loss adds no gradient (it is a recorded side effect, not a
// term of the loss the harness differentiates).
//
// Backward: gradients reach the router only through the combine weights:
// dprobs[t][e] = dweights[t][k] where e = topk[t][k], 0 elsewhere; softmax backward
//   s = sum_e dprobs[t][e] * p_e (expert order, from 0), dl_e = p_e * (dprobs_e - s);
// dW += dlogits^T x and dx = dlogits W (GEMM orders), both in the compute type; dx is
// returned unrounded so the MoE layer can add it to the other input gradients and
// round once.
//
// Saves (context "<moe>.router"): "input" (x) and "probs" (tokens, E) in the compute
// type. Under sequence parallelism with TP > 1 the router sees only this rank's
// sequence shard, so its weight is flagged `sequence_parallel` (its gradient is
// all-reduced over TP once per step, like the layernorms').
#pragma once
#include <string>
#include <vector>

#include "reference/modules/module.hpp"

namespace rcts {

struct RouterOutput {
  Tensor probs;    // (tokens, E) compute type
  Tensor topk;     // (tokens, k) i32, rank order
  Tensor weights;  // (tokens, k) compute type: probs at topk
};

class MoeRouter {
 public:
  // `moe_path` is the layer's path ("layers.<i>.moe"); the router lives at
  // "<moe_path>.router" and records "<moe_path>.aux_loss".
  MoeRouter(Runtime& rt, const std::string& moe_path);
  RouterOutput forward(SaveContext& ctx, const Tensor& x);
  // topk (tokens, k) i32 and dweights (tokens, k) compute type -> dx (tokens, h) in
  // the compute type (unrounded). Accumulates dW.
  Tensor backward(SaveContext& ctx, const Tensor& topk, const Tensor& dweights);
  void parameters(std::vector<Parameter*>& out) { out.push_back(&weight_); }
  Parameter& weight() { return weight_; }

 private:
  Runtime& rt_;
  std::string path_, aux_key_;
  int64_t experts_, hidden_, topk_;
  Parameter weight_;
};

}  // namespace rcts
