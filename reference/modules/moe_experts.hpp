// The routed experts of one MoE layer on this rank: local experts [p*L, (p+1)*L) of
// EP rank p (L = E / EP), each an MLP fc1 -> activation (GeLU tanh form, or SwiGLU)
// [-> expert dropout] -> fc2 of intermediate size F = moe_ffn_hidden_size (0 ->
// ffn_hidden_size), without biases.
//
// Input: this rank's rows in EXPERT LAYOUT (moe_dispatch.hpp), counts[j] rows for local
// expert j. Output: the same rows, (rows, h), in the activation dtype.
//
// Expert tensor parallelism (ETP = parallel.expert_tensor_parallel_size, over
// rt.etp_group): fc1 is column-parallel (rank r keeps rows tp_row_blocks of the full
// (F or 2F, h) weight: for SwiGLU the a and b halves are split separately), fc2 is
// row-parallel (columns [r*F/ETP, (r+1)*F/ETP) of the full (h, F) weight). The full
// weights "<moe>.experts.<e>.fc1.weight" / ".fc2.weight" (e the GLOBAL expert index)
// are drawn from name-keyed streams (make_parameter_slice), so any EP/ETP layout
// holds consistent shards of the same experts. Forward: the rows are all-gathered over
// ETP (etp_gather: every ETP rank processes the same rows with its shard), fc1 and the
// activation run on the shard, fc2's partial products are summed over ETP with
// all_reduce_sum (rank order), and each ETP rank keeps the rows of its own tokens,
// rounded once to the activation dtype. Backward mirrors it: output gradients are
// all-gathered, fc1's partial input gradients are all-reduced over ETP and each rank
// keeps its rows. Expert weight gradients cover every row this rank's shard processed.
//
// Numerics per expert j over its (contiguous) rows, compute type T, each op output
// rounded once to the activation dtype:
//   A = X W1_j^T, G = act(A), G' = dropout(G), Y = sum_ETP(G' W2_j^T)
//   dG' = dY W2_j, dW2_j += dY^T G', dA = act'(dG'), dX = sum_ETP(dA W1_j),
//   dW1_j += dA^T X                           (GEMMs in the order of design §2)
//
// Grouped GEMM (model.moe_grouped_gemm): fc1/act/fc2 run once over the concatenated
// rows of all local experts (per-expert GEMMs over contiguous row ranges in expert
// order); saved, in context "<moe>.experts": "fc1.input" (gathered rows, h),
// "act.input" (fc1 output), "dropout.mask" (when expert dropout is active) and
// "fc2.input" (dropout output). Without grouped GEMM each local expert e with at
// least one row is its own module saving "<e>.fc1.input", "<e>.act.input",
// "<e>.dropout.mask", "<e>.fc2.input" (experts with no rows are skipped entirely).
// Both modes give bitwise-identical outputs and gradients when expert dropout is off
// (the same GEMMs over the same rows); with dropout they draw different masks (one
// draw over all rows vs one per expert).
//
// Expert dropout (model.moe_expert_dropout > 0, training only) on the activation
// output, inside a fork of the tracker's expert-parallel-rng, logged as site
// "<moe>.experts.dropout" (grouped) or "<moe>.experts.<e>.dropout", kind "expert".
//
// Selective recompute "moe_act" (grouped GEMM only; an rcts::Error otherwise): the
// activation (+ expert dropout) runs through OutputDiscardingCheckpoint; its output is
// released after fc2 consumed and saved it and recomputed (under the forward's RNG
// snapshot) right before fc2's backward. Counter "<moe>.experts.act" counts one
// forward of the activation of all local experts per MoE forward (and one per
// recompute).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reference/modules/dropout.hpp"
#include "reference/modules/mlp.hpp"
#include "reference/modules/moe_dispatch.hpp"

namespace rcts {

// Activation then expert dropout: the region moe_act recomputes. `path` is
// "<moe>.experts" (grouped) or "<moe>.experts.<e>"; saves "act.input" (and
// "dropout.mask") under the context it is given. Counts `count_path` when not empty.
class ExpertActivation final : public Module {
 public:
  ExpertActivation(Runtime& rt, const std::string& path, bool swiglu, std::string count_path);
  using Module::backward;
  using Module::forward;
  std::vector<std::string> input_names() const override { return {"act.input"}; }
  Tensor forward(SaveContext& ctx, const Tensor& a) override;
  Tensor backward(SaveContext& ctx, const Tensor& dg) override;

 private:
  Runtime& rt_;
  std::string count_path_;
  Activation act_;
  DropoutSite dropout_;
};

class MoeExperts {
 public:
  MoeExperts(Runtime& rt, const std::string& moe_path, bool recompute_act);
  // x (rows, h) in expert layout with counts[j] rows for local expert j.
  Tensor forward(SaveContext& ctx, const Tensor& x, const std::vector<int64_t>& counts);
  Tensor backward(SaveContext& ctx, const Tensor& dy);
  void parameters(std::vector<Parameter*>& out);

  int64_t local_experts() const { return static_cast<int64_t>(experts_.size()); }
  int64_t first_expert() const { return first_; }
  bool grouped() const { return grouped_; }

 private:
  struct Expert {
    int64_t global = 0;
    Parameter fc1, fc2;
    std::unique_ptr<ExpertActivation> act;  // sequential mode
  };
  template <typename T> Tensor forward_t(SaveContext& ctx, const EtpPlan& plan, const Tensor& xg);
  template <typename T> Tensor backward_t(SaveContext& ctx, const EtpPlan& plan, const Tensor& dyg);

  Runtime& rt_;
  int layer_index() const;  // for the expert_fc1 / moe_act offload groups
  std::string path_;  // "<moe>.experts"
  bool grouped_, recompute_act_, swiglu_;
  int64_t hidden_, ffn_local_, fc1_rows_local_, first_;
  std::vector<Expert> experts_;
  std::unique_ptr<ExpertActivation> grouped_act_;
};

}  // namespace rcts
