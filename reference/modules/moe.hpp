// MoE layer: a drop-in replacement for the dense Mlp of a TransformerLayer, at path
// "layers.<i>.moe". Router -> EP dispatch -> routed experts (optionally grouped GEMM,
// expert-TP, expert dropout) -> return trip -> weighted combine, plus optional shared
// experts. Deterministic: every sum has one documented order, results do not depend
// on thread count or message arrival order, cross-rank sums only through the
// Communicator helpers (rank order).
//
// Tokens. The layer routes the tokens this rank holds: with TP = 1 all tokens of the
// micro-batch, with TP > 1 this rank's sequence shard (Megatron-LM requires sequence
// parallelism for MoE with TP > 1; without it the constructor throws rcts::Error).
//
// Forward, x (tokens, h) in the activation dtype:
//   1. router (moe_router.hpp): probs = softmax(x Wr^T), top-k with ties to the lower
//      expert index, weights w[t][k] = the top-k probabilities (not renormalised); in
//      training the Switch aux loss is recorded as side effect "<path>.aux_loss" (once:
//      Runtime skips side effects while recomputing). The aux loss has no gradient.
//   2. dispatch (moe_dispatch.hpp): assignments (t, k) in send order (expert, t, k),
//      counts exchanged first, token rows sent by all_to_allv over rt.ep_group, put in
//      expert layout on the owner (EP rank p owns experts [p*E/EP, (p+1)*E/EP)).
//   3. experts (moe_experts.hpp), incl. the ETP gather/reduce; outputs rounded to the
//      activation dtype.
//   4. return trip: the same all_to_allv mirrored; the source gets expert outputs y_{t,k}
//      back in send order.
//   5. combine, in the compute type, rounded ONCE to the activation dtype:
//        out[t] = (((0 + w[t][0]*y_{t,0}) + w[t][1]*y_{t,1}) + ... ) [+ shared[t]]
//      k in increasing order; shared[t] is the shared experts' output (already an
//      activation, rounded by its fc2) when model.moe_shared_expert_intermediate_size > 0.
// Backward mirrors it: dy_{t,k} = round(w[t][k] * dy[t]) travels the dispatch path with
// the forward's layout, the experts' input gradients come back in send order;
// dw[t][k] = sum_i dy[t][i] * y_{t,k}[i] (i = 0..h-1, from 0) feeds the router's softmax
// backward; then, in the compute type, rounded once:
//        dx[t] = ((sum_k dx_{t,k} (k increasing, from 0)) + dx_router[t]) [+ dx_shared[t]]
//
// Shared experts (model.moe_shared_expert_intermediate_size = S > 0): a dense MLP
// "<path>.shared_experts" fc1 (h -> S, or 2S for SwiGLU) -> activation -> fc2 (S -> h),
// no biases, tensor-parallel like Mlp (column fc1, row fc2; sequence-parallel gather /
// reduce-scatter under SP), run on all local tokens.
//
// Selective recompute (rt.config.recompute, only when rt.training() and the
// granularity is "selective"):
//   "shared_experts" -> the shared-expert MLP runs through checkpoint::forward/backward;
//   "moe_act"        -> the expert activation (+ expert dropout) is output-discarding
//                       (grouped GEMM only; see moe_experts.hpp);
//   "moe"            -> the whole layer is checkpointed by the caller (TransformerLayer),
//                       not here.
// Counters: "<path>" once per forward; "<path>.experts.act" once per forward of the
// expert activation; "<path>.shared_experts" once per shared-expert forward; each
// split into original and recompute.
//
// Saved tensors (context <path>): router.input (x), router.probs (tokens, E; compute
// type), combine.topk_index (tokens, k; i32), combine.weights (tokens, k; compute type),
// combine.expert_output (tokens*k, h; send order), the experts' saves (moe_experts.hpp)
// and the shared experts' fc1.input / act.input / fc2.input (or, checkpointed, only
// shared_experts.fc1.input as a checkpoint input).
//
// Parameters: "<path>.router.weight" (E, h), "<path>.experts.<e>.fc1.weight" /
// ".fc2.weight" for the local experts (global index e, ETP shards),
// "<path>.shared_experts.fc1.weight" / ".fc2.weight" (TP shards). Gradient reduction
// across ranks is the caller's: the router weight is flagged sequence_parallel under
// SP (all-reduce over TP); expert weight gradients cover the rows this rank's shard
// processed, and ranks of rt.edp_group that serve the same data-parallel replica must
// all-reduce them (expert_parameters() lists them).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reference/modules/linear.hpp"
#include "reference/modules/mlp.hpp"
#include "reference/modules/moe_experts.hpp"
#include "reference/modules/moe_router.hpp"

namespace rcts {

// Which MoE-internal selective recompute applies (all false in eval or without
// selective granularity).
struct MoeRecompute {
  bool shared_experts = false;
  bool moe_act = false;
  static MoeRecompute from(const Config& c);
};

class MoeLayer final : public Module {
 public:
  MoeLayer(Runtime& rt, std::string path);
  using Module::backward;
  using Module::forward;
  std::vector<std::string> input_names() const override { return {"input"}; }
  Tensor forward(SaveContext& ctx, const Tensor& x) override;    // (tokens_local, h) -> (tokens_local, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;  // writes dx; accumulates param grads
  void parameters(std::vector<Parameter*>& out) override;
  // The routed experts' weights (for an expert-data-parallel gradient reduction).
  void expert_parameters(std::vector<Parameter*>& out) { experts_.parameters(out); }

  const std::string& path() const { return path_; }
  const MoeRecompute& recompute() const { return recompute_; }
  MoeRouter& router() { return router_; }
  MoeExperts& experts() { return experts_; }

 private:
  Runtime& rt_;
  std::string path_;
  MoeRecompute recompute_;
  MoeRouter router_;
  MoeExperts experts_;
  std::unique_ptr<Mlp> shared_;  // shared experts: a bias-free dense MLP on every local token
};

}  // namespace rcts
