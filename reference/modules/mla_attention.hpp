// Multi-latent attention (DeepSeek-V2/V3, Megatron-LM's MLASelfAttention; design §14).
// Token layout (s, b, ·) as everywhere; heads (b, a, s, d). With n = this rank's heads,
// dn = qk_head_dim, dr = qk_pos_emb_head_dim, dq = dn + dr, dv = v_head_dim:
//   q:   q_lora_rank > 0: linear_q_down_proj (h -> q_lora_rank, replicated) ->
//        q_layernorm -> linear_q_up_proj (column parallel, -> n*dq, per head [nope|pe]);
//        q_lora_rank = 0: linear_q_proj (column parallel, h -> n*dq)
//   kv:  linear_kv_down_proj (h -> kv_lora_rank + dr, replicated) split into the latent
//        (kv_layernorm -> linear_kv_up_proj, column parallel, -> n*(dn+dv), per head
//        [k_nope|v]) and k_pe (dr, one for all heads)
//   RoPE on q's pe part and on k_pe (rope_table.hpp); key = [k_nope | RoPE(k_pe)] per head
//   core attention (q/k head dim dq, v head dim dv, scale 1/sqrt(dq)), then the row
//   parallel output projection (n*dv -> h, biased when model.add_bias_linear).
// No other linear has a bias (Megatron: bias=False).
// Selective recompute: "core_attn" checkpoints the core attention; "mla_up_proj" runs the
// up-projections + RoPE (MlaUpProj) as an output-discarding checkpoint: its q, k, v are
// released once core attention saved them and recomputed when the gradient of the core
// attention's output arrives (before core attention's backward), as Megatron does.
// Fine-grained offload (design §9, §14), Megatron-LM's MLA groups: qkv_linear around
// everything from the down-projections to RoPE (get_query_key_value_tensors), core_attn
// around core attention, attn_proj around the output projection, each committed right
// after its module. Under mla_up_proj the up-projection recompute reads the qkv_linear
// group's saves before that group's backward commit point, so it reloads it on demand.
// Under TP the k_pe gradient is a sum over all heads, so each rank's partial sum is
// all-reduced in rank order before it reaches the replicated linear_kv_down_proj; its
// weight, q_down's and the norms' gradients are then identical on every rank.
// Splits, head concatenations and RoPE go through the backend's GEMM only (design §14).
#pragma once
#include <memory>

#include "reference/modules/core_attention.hpp"
#include "reference/modules/layernorm.hpp"
#include "reference/modules/linear.hpp"

namespace rcts {

struct MlaDims {
  int64_t s, b, h, a, n;  // a: all heads, n: this rank's heads
  int64_t qr, kvr, dn, dr, dq, dv;
  static MlaDims from(const Runtime& rt);
};

// The constant tables the MLA GEMMs read (compute type, Category::param): an identity
// (copies and splits as exact products) and the RoPE matrices R_p, p < s.
struct MlaTables {
  Tensor identity;  // (ni, ni)
  int64_t ni = 0;
  Tensor rope;      // (s, dr, dr)
};

// The region Megatron checkpoints for mla_up_proj: q and kv up-projections and RoPE.
// Inputs (q_compressed, kv_compressed, k_pos_emb): (N, q_lora_rank or h) normed,
// (N, kv_lora_rank) normed, (N, dr). Outputs q, k (b, n, s, dq), v (b, n, s, dv).
class MlaUpProj final : public Region {
 public:
  MlaUpProj(Runtime& rt, const std::string& path, const MlaDims& m, const MlaTables& tables);
  std::vector<std::string> input_names() const override { return {"q_compressed", "kv_compressed", "k_pos_emb"}; }
  std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& in) override;
  std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) override;
  void parameters(std::vector<Parameter*>& out);

 private:
  Runtime& rt_;
  std::string path_;
  MlaDims m_;
  const MlaTables& tables_;
  Linear q_up_, kv_up_;
};

class MlaAttention final : public Module {
 public:
  MlaAttention(Runtime& rt, std::string path, bool recompute_core, bool recompute_up_proj, int layer = 0);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // (s*b, h) -> (s*b, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;

 private:
  Runtime& rt_;
  std::string path_;
  MlaDims m_;
  bool recompute_core_, recompute_up_;
  int layer_;
  MlaTables tables_;
  std::unique_ptr<Linear> q_down_;
  std::unique_ptr<LayerNorm> q_norm_;
  Linear kv_down_;
  LayerNorm kv_norm_;
  MlaUpProj up_;
  CoreAttention core_;
  Linear proj_;
};

}  // namespace rcts
