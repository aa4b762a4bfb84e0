#include "reference/modules/attention.hpp"

#include "reference/recompute/checkpoint_function.hpp"

namespace rcts {

namespace {
// Copies between the token layout (s, b, width) at column `col0` and heads (b, a, s, d).
// Exact (no arithmetic), so it is done on raw elements of any dtype.
template <typename E>
void tokens_to_heads(const E* tok, int64_t width, int64_t col0, E* heads, int64_t s, int64_t b, int64_t a, int64_t d) {
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ai = 0; ai < a; ++ai)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          heads[((bi * a + ai) * s + si) * d + di] = tok[(si * b + bi) * width + col0 + ai * d + di];
}
template <typename E>
void heads_to_tokens(const E* heads, E* tok, int64_t width, int64_t col0, int64_t s, int64_t b, int64_t a, int64_t d) {
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ai = 0; ai < a; ++ai)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          tok[(si * b + bi) * width + col0 + ai * d + di] = heads[((bi * a + ai) * s + si) * d + di];
}

template <typename F> void by_element_size(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    case 8: f.template operator()<uint64_t>(); break;
    default: throw Error("attention: unsupported activation dtype " + std::string(dtype_name(t)));
  }
}
}  // namespace

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
      qkv_(rt, path_ + ".qkv", {h_, 3 * h_, true, TpMode::column, 3}),
      proj_(rt, path_ + ".proj", {h_, h_, true, TpMode::row, 1}),
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
  by_element_size(rt_.act_dtype(), [&]<typename E>() {
    const E* src = reinterpret_cast<const E*>(qkv.bytes());
    for (int64_t i = 0; i < 3; ++i)
      tokens_to_heads(src, 3 * hl_, i * hl_, reinterpret_cast<E*>(heads[i].bytes()), s_, b_, a_, d_);
  });
  SaveContext& cctx = ctx.child("#core");
  Tensor context;
  {
    auto group = offload_group(rt_, "core_attn", layer_);
    context = checkpoint::run_forward(recompute_core_, rt_.rng, core_, cctx, heads).at(0);
  }
  offload_commit(rt_, "core_attn", layer_);
  Tensor merged = rt_.activation({s_ * b_, hl_}, path_ + ".context");
  by_element_size(rt_.act_dtype(), [&]<typename E>() {
    heads_to_tokens(reinterpret_cast<const E*>(context.bytes()), reinterpret_cast<E*>(merged.bytes()), hl_, 0, s_,
                    b_, a_, d_);
  });
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
  Tensor dcontext = rt_.activation({b_, a_, s_, d_}, path_ + ".context.grad");
  by_element_size(rt_.act_dtype(), [&]<typename E>() {
    tokens_to_heads(reinterpret_cast<const E*>(dmerged.bytes()), hl_, 0,
                    reinterpret_cast<E*>(dcontext.bytes()), s_, b_, a_, d_);
  });
  SaveContext& cctx = ctx.child("#core");
  offload_backward_commit(rt_, "core_attn", layer_);
  auto dheads = checkpoint::run_backward(recompute_core_, rt_.rng, core_, cctx, {dcontext});
  offload_backward_start(rt_, "core_attn", layer_);
  Tensor dqkv = rt_.activation({s_ * b_, 3 * hl_}, path_ + ".qkv.output.grad");
  by_element_size(rt_.act_dtype(), [&]<typename E>() {
    for (int64_t i = 0; i < 3; ++i)
      heads_to_tokens(reinterpret_cast<const E*>(dheads[i].bytes()),
                      reinterpret_cast<E*>(dqkv.bytes()), 3 * hl_, i * hl_, s_, b_, a_, d_);
  });
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
