#include "reference/modules/attention.hpp"

#include "reference/recompute/checkpoint_function.hpp"

namespace rcts {

SelfAttention::SelfAttention(Runtime& rt, std::string path, bool recompute_core, int layer)
    : rt_(rt),
      path_(std::move(path)),
      s_(rt.config.model.seq_length),
      b_(rt.config.model.micro_batch_size),
      h_(rt.config.model.hidden_size),
      a_(rt.config.model.num_attention_heads / rt.tp_group->size()),
      d_(rt.config.model.hidden_size / rt.config.model.num_attention_heads),
      hl_(a_ * d_),
      recompute_core_(recompute_core),
      layer_(layer),
      qkv_(rt, path_ + ".qkv", {h_, 3 * h_, rt.config.model.add_bias_linear, TpMode::column, 3}),
      proj_(rt, path_ + ".proj", {h_, h_, rt.config.model.add_bias_linear, TpMode::row, 1}),
      core_(rt, path_) {}

Tensor SelfAttention::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  Tensor qkv;
  {
    auto group = offload_group(rt_, "qkv_linear", layer_);
    qkv = qkv_.forward(ctx.child("qkv"), x);
  }
  offload_commit(rt_, "qkv_linear", layer_);
  // q, k and v are three views of one (3, b, a, s, d) storage, as Megatron's are views
  // of the mixed QKV output: offload must keep distinct views apart.
  Tensor qkv_heads = rt_.activation({3, b_, a_, s_, d_}, path_ + ".qkv_heads");
  std::vector<Tensor> heads;
  const char* names[] = {"q", "k", "v"};
  for (int64_t i = 0; i < 3; ++i) heads.push_back(qkv_heads.rows(i, i + 1).view({b_, a_, s_, d_}, path_ + "." + names[i]));
  const int esize = static_cast<int>(dtype_size(rt_.act_dtype()));
  for (int64_t i = 0; i < 3; ++i)
    rt_.backend.tokens_to_heads(heads[i].bytes(), qkv.bytes(), esize, 3 * hl_, i * hl_, s_, b_, a_, d_);
  SaveContext& cctx = ctx.child("#core");
  Tensor context;
  {
    auto group = offload_group(rt_, "core_attn", layer_);
    context = checkpoint::run_forward(recompute_core_, rt_.rng, core_, cctx, heads).at(0);
  }
  offload_commit(rt_, "core_attn", layer_);
  // A fused core attention (model.flash_attention) already gives the token layout.
  Tensor merged = context;
  if (!rt_.config.model.flash_attention) {
    merged = rt_.activation({s_ * b_, hl_}, path_ + ".context");
    rt_.backend.heads_to_tokens(merged.bytes(), context.bytes(), esize, hl_, 0, s_, b_, a_, d_);
  }
  Tensor out;
  {
    auto group = offload_group(rt_, "attn_proj", layer_);
    out = proj_.forward(ctx.child("proj"), merged);
  }
  offload_commit(rt_, "attn_proj", layer_);
  return out;
}

Tensor SelfAttention::backward(SaveContext& ctx, const Tensor& dy) {
  offload_backward_commit(rt_, "attn_proj", layer_);
  Tensor dmerged = proj_.backward(ctx.child("proj"), dy);
  offload_backward_start(rt_, "attn_proj", layer_);
  const int esize = static_cast<int>(dtype_size(rt_.act_dtype()));
  Tensor dcontext = dmerged;  // a fused core attention takes the token layout
  if (!rt_.config.model.flash_attention) {
    dcontext = rt_.activation({b_, a_, s_, d_}, path_ + ".context.grad");
    rt_.backend.tokens_to_heads(dcontext.bytes(), dmerged.bytes(), esize, hl_, 0, s_, b_, a_, d_);
  }
  SaveContext& cctx = ctx.child("#core");
  offload_backward_commit(rt_, "core_attn", layer_);
  auto dheads = checkpoint::run_backward(recompute_core_, rt_.rng, core_, cctx, {dcontext});
  offload_backward_start(rt_, "core_attn", layer_);
  Tensor dqkv = rt_.activation({s_ * b_, 3 * hl_}, path_ + ".qkv.output.grad");
  for (int64_t i = 0; i < 3; ++i)
    rt_.backend.heads_to_tokens(dqkv.bytes(), dheads[i].bytes(), esize, 3 * hl_, i * hl_, s_, b_, a_, d_);
  offload_backward_commit(rt_, "qkv_linear", layer_);
  Tensor dx = qkv_.backward(ctx.child("qkv"), dqkv);
  offload_backward_start(rt_, "qkv_linear", layer_);
  return dx;
}

void SelfAttention::parameters(std::vector<Parameter*>& out) {
  qkv_.parameters(out);
  proj_.parameters(out);
}

}  // namespace rcts
