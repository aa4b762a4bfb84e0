#include "reference/modules/transformer_layer.hpp"

#include <algorithm>

#include "reference/config/validate.hpp"
#include "reference/modules/token_mixer.hpp"
#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_function.hpp"
#include "reference/recompute/checkpoint_state.hpp"
#include "reference/recompute/output_discarding.hpp"

namespace rcts {

SelectiveRecompute SelectiveRecompute::from(const Config& c) {
  SelectiveRecompute r;
  // The settings the run uses: the moe_layer_recompute alias means selective + moe
  // also when no granularity is given.
  const RecomputeConfig e = effective_recompute(c.recompute);
  if (!c.run.training || e.recompute_granularity != "selective") return r;
  auto has = [&](const char* m) {
    const auto& v = e.recompute_modules;
    return std::find(v.begin(), v.end(), m) != v.end();
  };
  r.core_attn = has("core_attn");
  r.mlp = has("mlp");
  r.moe = has("moe");
  r.layernorm = has("layernorm");
  r.mla_up_proj = has("mla_up_proj");
  r.gdn_norm_out = has("gdn_norm_out");
  return r;
}

namespace {
std::string layer_path(int i) { return "layers." + std::to_string(i); }
bool moe_layer(const Config& c, int i) { return c.model.num_moe_experts > 0 && i % c.model.moe_layer_freq == 0; }
std::unique_ptr<Module> make_mlp(Runtime& rt, const std::string& path, bool moe) {
  if (moe) return std::make_unique<MoeLayer>(rt, path + ".moe");
  return std::make_unique<Mlp>(rt, path + ".mlp", -1, rt.config.model.add_bias_linear);
}
}  // namespace

TransformerLayer::TransformerLayer(Runtime& rt, int index)
    : rt_(rt),
      path_(layer_path(index)),
      index_(index),
      recompute_(SelectiveRecompute::from(rt.config)),
      input_layernorm_(rt, path_ + ".input_layernorm", rt.config.model.hidden_size),
      attention_(make_token_mixer(rt, path_, recompute_, index)),
      pre_mlp_layernorm_(rt, path_ + ".pre_mlp_layernorm", rt.config.model.hidden_size),
      attn_dropout_{path_ + ".attention.hidden_dropout", "hidden", rt.config.model.hidden_dropout},
      mlp_dropout_{path_ + (moe_layer(rt.config, index) ? ".moe" : ".mlp") + ".hidden_dropout", "hidden",
                   rt.config.model.hidden_dropout},
      is_moe_(moe_layer(rt.config, index)),
      mlp_(make_mlp(rt, path_, is_moe_)),
      recompute_mlp_(is_moe_ ? recompute_.moe : recompute_.mlp),
      gdn_layer_(rt.config.gdn_layer(index)) {}

std::string TransformerLayer::attn_norm_group() const {
  return gdn_layer_ && !fault_on(Fault::gdn_offloads_attn_norm) ? "" : "attn_norm";
}

using CheckpointPtr = std::shared_ptr<OutputDiscardingCheckpoint>;

namespace {
// The output-discarding checkpoint of norm `name` (selective layernorm recompute).
StashKey<CheckpointPtr> norm_checkpoint(const char* name) { return {name}; }
}  // namespace

Tensor TransformerLayer::norm_forward(SaveContext& ctx, const char* name, LayerNorm& norm, const Tensor& x) {
  SaveContext& nctx = ctx.child(name);
  if (!recompute_.layernorm) return norm.forward(nctx, x);
  auto ck = std::make_shared<OutputDiscardingCheckpoint>(rt_.rng, norm, nctx);
  ctx.stash(norm_checkpoint(name), ck);
  return ck->forward({x}).at(0);
}

void TransformerLayer::norm_fire_recompute(SaveContext& ctx, const char* name) {
  if (recompute_.layernorm) ctx.stashed(norm_checkpoint(name))->recompute();
}

Tensor TransformerLayer::norm_backward(SaveContext& ctx, const char* name, LayerNorm& norm, const Tensor& dy) {
  if (!recompute_.layernorm) return norm.backward(ctx.child(name), dy);
  return ctx.stashed(norm_checkpoint(name))->backward({dy}).at(0);
}

Tensor TransformerLayer::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  rt_.add_side_effect(path_ + ".tokens_seen", static_cast<double>(x.dim(0)));
  // Layer-level cpu_offloading (TE-style): the whole layer is one offload group.
  auto layer_group = offload_group(rt_, "layer", index_);
  SaveContext& actx = ctx.child("attention");
  SaveContext& mctx = ctx.child(is_moe_ ? "moe" : "mlp");

  Tensor ln1;
  {
    auto group = offload_group(rt_, attn_norm_group(), index_);
    ln1 = norm_forward(ctx, "input_layernorm", input_layernorm_, x);
  }
  Tensor attn = attention_->forward(actx, ln1);
  if (recompute_.layernorm && ctx.enabled())
    ctx.stashed(norm_checkpoint("input_layernorm"))->discard_output_and_register_recompute(path_ + ".attention.output");
  Tensor h1 = add(rt_, x, dropout_forward(rt_, actx.child("hidden_dropout"), attn_dropout_, attn), path_ + ".residual1");
  // Delayed commit: the residual add above was the layer input's last forward consumer.
  offload_commit(rt_, attn_norm_group(), index_);

  Tensor ln2;
  {
    auto group = offload_group(rt_, "mlp_norm", index_);
    ln2 = norm_forward(ctx, "pre_mlp_layernorm", pre_mlp_layernorm_, h1);
  }
  SaveContext& mlp_ctx = mctx.child("#body");
  Tensor m = checkpoint::run_forward(recompute_mlp_, rt_.rng, *mlp_, mlp_ctx, {ln2}).at(0);
  if (recompute_.layernorm && ctx.enabled())
    ctx.stashed(norm_checkpoint("pre_mlp_layernorm"))->discard_output_and_register_recompute(mctx.path() + ".output");
  Tensor out = add(rt_, h1, dropout_forward(rt_, mctx.child("hidden_dropout"), mlp_dropout_, m), path_ + ".output");
  offload_commit(rt_, "mlp_norm", index_);
  offload_commit(rt_, "layer", index_);
  return out;
}

Tensor TransformerLayer::backward(SaveContext& ctx, const Tensor& dy) {
  SaveContext& actx = ctx.child("attention");
  SaveContext& mctx = ctx.child(is_moe_ ? "moe" : "mlp");
  const bool late = fault_on(Fault::late_output_recompute);
  offload_backward_commit(rt_, "layer", index_);
  offload_backward_commit(rt_, "mlp_norm", index_);

  // MLP branch. The gradient of the MLP output arrives: the norm recompute fires.
  Tensor dm = dropout_backward(rt_, mctx.child("hidden_dropout"), mlp_dropout_, dy);
  if (!late) norm_fire_recompute(ctx, "pre_mlp_layernorm");
  SaveContext& mlp_ctx = mctx.child("#body");
  Tensor dln2 = checkpoint::run_backward(recompute_mlp_, rt_.rng, *mlp_, mlp_ctx, {dm}).at(0);
  if (late) norm_fire_recompute(ctx, "pre_mlp_layernorm");
  Tensor dh1 = add(rt_, dy, norm_backward(ctx, "pre_mlp_layernorm", pre_mlp_layernorm_, dln2), path_ + ".residual1.grad");
  offload_backward_start(rt_, "mlp_norm", index_);
  offload_backward_commit(rt_, attn_norm_group(), index_);

  // Attention branch.
  Tensor da = dropout_backward(rt_, actx.child("hidden_dropout"), attn_dropout_, dh1);
  if (!late) norm_fire_recompute(ctx, "input_layernorm");
  Tensor dln1 = attention_->backward(actx, da);
  if (late) norm_fire_recompute(ctx, "input_layernorm");
  Tensor dx = add(rt_, dh1, norm_backward(ctx, "input_layernorm", input_layernorm_, dln1), path_ + ".input.grad");
  offload_backward_start(rt_, attn_norm_group(), index_);
  offload_backward_start(rt_, "layer", index_);
  ctx.clear();
  return dx;
}

void TransformerLayer::parameters(std::vector<Parameter*>& out) {
  input_layernorm_.parameters(out);
  attention_->parameters(out);
  pre_mlp_layernorm_.parameters(out);
  static_cast<Module&>(*mlp_).parameters(out);
}

}  // namespace rcts
