// Self-attention: QKV projection, head split, core attention (optionally
// checkpointed: selective recompute "core_attn"), head merge, output projection.
// Token layout is Megatron's (s, b, h) row-major; heads are (b, a, s, d).
// QKV weight rows are [q (h) | k (h) | v (h)], head-major inside each block.
// Tensor parallelism: QKV is column parallel (each rank keeps its heads' rows of
// q, k and v), the output projection row parallel.
#pragma once
#include <memory>

#include "reference/modules/core_attention.hpp"
#include "reference/modules/linear.hpp"

namespace rcts {

class SelfAttention final : public Module {
 public:
  SelfAttention(Runtime& rt, std::string path, bool recompute_core, int layer = 0);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // (s*b, h) -> (s*b, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;

 private:
  Runtime& rt_;
  std::string path_;
  int64_t s_, b_, h_, a_, d_, hl_;  // a_: this rank's heads; hl_ = a_ * d_
  bool recompute_core_;
  int layer_;  // for offload groups qkv_linear, core_attn, attn_proj
  Linear qkv_, proj_;
  CoreAttention core_;
};

}  // namespace rcts
