// Pre-LN GPT transformer layer (design §4):
//   h1  = x  + hidden_dropout(attention(input_layernorm(x)))
//   out = h1 + hidden_dropout(mlp(pre_mlp_layernorm(h1)))
// where mlp is the dense MLP, or a MoE layer when num_moe_experts > 0 and
// layer % moe_layer_freq == 0 (module path "layers.<i>.moe").
// Hidden dropout draws from the device default generator (the residual stream is
// replicated across TP ranks, so masks must agree). Selective recompute:
// core_attn and mlp are normal checkpoints; layernorm is output-discarding: both
// norms' outputs are released after their consumer saved them and recomputed when
// the gradient of the consumer's output (attention output / MLP output) arrives.
#pragma once
#include <memory>

#include "reference/modules/layernorm.hpp"
#include "reference/modules/mlp.hpp"
#include "reference/modules/moe.hpp"

namespace rcts {

struct SelectiveRecompute {
  bool core_attn = false;
  bool mlp = false;
  bool moe = false;  // the whole MoE layer (normal checkpointing)
  bool layernorm = false;
  bool mla_up_proj = false;   // MLA's Q/KV up-projection region (output-discarding)
  bool gdn_norm_out = false;  // GDN's gated output norm (output-discarding)
  static SelectiveRecompute from(const Config& c);  // all false in eval or without selective
};

class TransformerLayer final : public Module {
 public:
  TransformerLayer(Runtime& rt, int index);
  using Module::backward;
  using Module::forward;
  std::vector<std::string> input_names() const override { return {"input"}; }
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // (s*b, h) -> (s*b, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;
  const std::string& path() const { return path_; }

 private:
  Tensor norm_forward(SaveContext& ctx, const char* name, LayerNorm& norm, const Tensor& x);
  void norm_fire_recompute(SaveContext& ctx, const char* name);
  Tensor norm_backward(SaveContext& ctx, const char* name, LayerNorm& norm, const Tensor& dy);

  Runtime& rt_;
  std::string path_;
  int index_;
  SelectiveRecompute recompute_;
  LayerNorm input_layernorm_;
  std::unique_ptr<Module> attention_;  // the token mixer (token_mixer.hpp)
  LayerNorm pre_mlp_layernorm_;
  DropoutSite attn_dropout_, mlp_dropout_;
  bool is_moe_;
  std::unique_ptr<Module> mlp_;  // Mlp or MoeLayer
  bool recompute_mlp_;           // checkpoint mlp_ as a whole (selective "mlp" or "moe")
  bool gdn_layer_;
  // "attn_norm", or "" (no group) on a GDN layer: Megatron-LM's GDN spec fuses the input
  // norm into in_proj (an IdentityOp input_layernorm), and TransformerLayer turns
  // attn_norm off for an IdentityOp norm (design §15).
  std::string attn_norm_group() const;
};

}  // namespace rcts
