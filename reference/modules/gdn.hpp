// Gated delta net token mixer (Megatron-LM megatron/core/ssm/gated_delta_net; design
// §15), the linear-attention layer of hybrid models such as Qwen3-Next:
//   [q | k | v | z | b | a] = in_proj(x)                    (column parallel, no bias)
//   q, k, v = SiLU(causal depthwise conv(q | k | v))         (kernel linear_conv_kernel_dim)
//   o = gated delta rule(l2norm(q), l2norm(k), v, sigmoid(b), -exp(A_log) softplus(a + dt_bias))
//   y = RMSNorm(o) * w * SiLU(z)  per value head             (the gated output norm)
//   out = out_proj(y)                                        (row parallel, no bias)
// Heads: Hk = linear_num_key_heads / t key (q, k) heads, Hv = linear_num_value_heads / t
// value heads per TP rank; value head h reads key head h / (Hv / Hk). Selective
// recompute `gdn_norm_out` makes the gated norm an output-discarding checkpoint: y is
// released once out_proj saved it and recomputed when out_proj's output gradient
// arrives (Megatron-LM's CheckpointWithoutOutput over _gated_norm_and_a2a).
#pragma once
#include "reference/modules/linear.hpp"

namespace rcts {

class GatedDeltaNet final : public Module {
 public:
  GatedDeltaNet(Runtime& rt, std::string path, bool recompute_norm_out, int layer);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // (s*b, h) -> (s*b, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;

  // The gated output norm as a region: inputs {o, z} in token layout (s*b, Hv*dv),
  // output y (s*b, Hv*dv); saves both inputs.
  class GatedNorm final : public Region {
   public:
    GatedNorm(Runtime& rt, std::string path, int64_t dv, Parameter& weight) : rt_(rt), path_(std::move(path)), dv_(dv), w_(weight) {}
    std::vector<std::string> input_names() const override { return {"input", "gate"}; }
    std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& in) override;
    std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) override;

   private:
    Runtime& rt_;
    std::string path_;
    int64_t dv_;
    Parameter& w_;
  };

 private:
  Runtime& rt_;
  std::string path_;
  int64_t s_, b_, h_, hk_, hv_, dk_, dv_, K_, width_;  // hk_, hv_: this rank's heads
  bool recompute_norm_out_;
  int layer_;
  Linear in_proj_;
  Parameter conv_q_, conv_k_, conv_v_, A_log_, dt_bias_, norm_weight_;
  GatedNorm norm_;
  Linear out_proj_;
};

}  // namespace rcts
