// Core attention: softmax(causal(q k^T * scale)) with attention dropout, times v.
// Inputs q, k (b, a, s, d), v and output (b, a, s, dv) in the activation dtype; dense
// attention has dv = d, MLA (design §14) its own v head dim. scale = 1/sqrt(d). Scores stay
// in the compute type (never materialised as an activation); the probabilities
// (softmax output) and the dropped probabilities are rounded to the activation
// dtype and saved, as Korthikanti et al. count them (2as²b + as²b + 2as²b bytes in
// bf16). Attention dropout draws from the model-parallel-rng tracker stream: heads
// are sharded across TP ranks, so masks must differ between ranks (design §5).
// Saves: q, k, v, softmax.output, dropout.mask, dropout.output.
//
// With model.flash_attention the backend's fused attention (reference/backend/
// fused_attention.hpp) runs instead: no s² tensor exists. The dropout (seed, offset)
// comes from the same model-parallel-rng reservation as above (the generator advances
// as for an s² mask), is logged as a draw without mask bits and is stashed for the
// backward, which draws the library's mask again from it. Its output and the gradient
// it takes are in token layout (s·b, a·dv): the projection's input, no permute. Saves:
// q, k, v, context (the output, one storage with proj.input) and softmax.stats (f32,
// b·a·s).
#pragma once
#include "reference/modules/dropout.hpp"
#include "reference/modules/module.hpp"

namespace rcts {

class CoreAttention final : public Region {
 public:
  CoreAttention(Runtime& rt, std::string path);
  std::vector<std::string> input_names() const override { return {"q", "k", "v"}; }
  std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& qkv) override;
  std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) override;

 private:
  std::vector<Tensor> forward_fused(SaveContext& ctx, const std::vector<Tensor>& qkv);
  std::vector<Tensor> backward_fused(SaveContext& ctx, const std::vector<Tensor>& dout);
  Runtime& rt_;
  std::string path_;
  DropoutSite dropout_;
};

}  // namespace rcts
