#include "reference/modules/core_attention.hpp"

#include <cmath>

#include "kernels/common/dropout_rule.hpp"
#include "reference/recompute/checkpoint_state.hpp"
#include "reference/runtime/compute.hpp"

namespace rcts {

CoreAttention::CoreAttention(Runtime& rt, std::string path)
    : rt_(rt), path_(std::move(path)),
      dropout_{path_ + ".dropout", "attention", rt.config.model.attention_dropout} {}

namespace {
// 1/sqrt(d) computed in double (sqrt and division are correctly rounded), rounded once.
template <typename T> T attention_scale(int64_t d) { return static_cast<T>(1.0 / std::sqrt(static_cast<double>(d))); }

// The dropout draw a fused forward made, for its backward.
struct FusedDraw {
  uint64_t seed = 0, offset = 0;
};
constexpr StashKey<FusedDraw> kFusedDraw{"core_attention.fused_draw"};

FusedAttention& fused_of(Runtime& rt, const Tensor& q, const FusedAttentionShape& sh, double p) {
  FusedAttention* fa = rt.backend.fused_attention();
  RCTS_CHECK(fa, "model.flash_attention = true needs a backend with fused attention (cuda-cudnn); backend '" +
                     rt.backend.name() + "' has none");
  if (const std::string why = fa->refusal(q.dtype(), sh, p); !why.empty())
    throw Error("backend '" + rt.backend.name() + "' cannot run this core attention fused: " + why);
  return *fa;
}
}  // namespace

std::vector<Tensor> CoreAttention::forward_fused(SaveContext& ctx, const std::vector<Tensor>& in) {
  const Tensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const FusedAttentionShape sh{q.dim(0), q.dim(1), q.dim(2), q.dim(3), v.dim(3)};
  const double p = dropout_active(rt_, dropout_.p) ? dropout_.p : 0.0;
  FusedAttention& fa = fused_of(rt_, q, sh, p);
  FusedDraw draw;
  if (p > 0) {
    // The reservation an s² mask would take, so RNG states match the unfused path's.
    auto fork = rt_.rng.tracker().fork(kModelParallelRng);
    Generator& gen = rt_.rng.device();
    const int64_t n = sh.b * sh.a * sh.s * sh.s;
    draw.seed = gen.state().seed;
    draw.offset = gen.reserve(dropout_rule::blocks_for(n));
    // No bits: the mask lives inside the library call (digest 0, no mask kept).
    rt_.masks.push_back({dropout_.path, dropout_.kind, rt_.rng.current_stream(), draw.seed, draw.offset, n, p, 0,
                         rt_.micro_batch, is_recomputing(), rt_.step, Shape{sh.b, sh.a, sh.s, sh.s}, Tensor{}});
  }
  // Token layout: the projection's input itself (fused_attention.hpp).
  Tensor out = rt_.activation({sh.s * sh.b, sh.a * sh.dv}, path_ + ".context");
  Tensor stats = Tensor::uninitialized({sh.b, sh.a, sh.s}, DType::f32, rt_.place(), path_ + ".softmax.stats");
  fa.forward(out.bytes(), stats.data<float>(), q.bytes(), k.bytes(),
             v.bytes(), q.dtype(), sh, attention_scale<double>(sh.d), p, draw.seed, draw.offset);
  ctx.save(q, "q");
  ctx.save(k, "k");
  ctx.save(v, "v");
  ctx.save(out, "context");
  ctx.save(stats, "softmax.stats");
  ctx.stash(kFusedDraw, draw);
  return {out};
}

std::vector<Tensor> CoreAttention::backward_fused(SaveContext& ctx, const std::vector<Tensor>& dout) {
  // dout and out in token layout, dq, dk, dv in head layout.
  Tensor q = ctx.load("q"), k = ctx.load("k"), v = ctx.load("v"), out = ctx.load("context"),
         stats = ctx.load("softmax.stats");
  const FusedAttentionShape sh{q.dim(0), q.dim(1), q.dim(2), q.dim(3), v.dim(3)};
  const double p = dropout_active(rt_, dropout_.p) ? dropout_.p : 0.0;
  FusedAttention& fa = fused_of(rt_, q, sh, p);
  const FusedDraw draw = ctx.stashed(kFusedDraw);
  Tensor dq = rt_.activation(q.shape(), path_ + ".q.grad");
  Tensor dk = rt_.activation(k.shape(), path_ + ".k.grad");
  Tensor dv = rt_.activation(v.shape(), path_ + ".v.grad");
  fa.backward(dq.bytes(), dk.bytes(), dv.bytes(), dout.at(0).bytes(),
              q.bytes(), k.bytes(), v.bytes(), out.bytes(), stats.data<float>(),
              q.dtype(), sh, attention_scale<double>(sh.d), p, draw.seed, draw.offset);
  return {dq, dk, dv};
}

std::vector<Tensor> CoreAttention::forward(SaveContext& ctx, const std::vector<Tensor>& in) {
  rt_.counters.count_forward(path_ + ".core");
  if (rt_.config.model.flash_attention) return forward_fused(ctx, in);
  const Tensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  // d: the q/k head dim (scores, scale); dv: the v head dim (context). Equal in dense
  // attention; MLA's differ (design §14).
  const int64_t bh = q.dim(0) * q.dim(1), s = q.dim(2), d = q.dim(3), dv = v.dim(3);
  ctx.save(q, "q");
  ctx.save(k, "k");
  ctx.save(v, "v");
  Tensor probs = rt_.activation({q.dim(0), q.dim(1), s, s}, path_ + ".softmax.output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> qv(rt_, q), kv(rt_, k);
    // Scores land in the probabilities' buffer; the softmax then runs in place.
    ComputeOut<T> pv(rt_, probs);
    // scores = (q k^T) * scale per head: the product rounded, then scaled.
    ops.gemm_batched(Trans::N, Trans::T, s, s, d, qv.data(), d, s * d, kv.data(), d, s * d, pv.data(), s, s * s, bh,
                     false);
    ops.scale(pv.data(), pv.data(), attention_scale<T>(d), bh * s * s);
    ops.softmax_causal_forward(pv.data(), pv.data(), bh, s);
    pv.commit();
  });
  ctx.save(probs, "softmax.output");
  SaveContext& dctx = ctx.child("dropout");
  Tensor dropped;
  {
    auto fork = rt_.rng.tracker().fork(kModelParallelRng);
    dropped = dropout_forward(rt_, dctx, dropout_, probs);
  }
  if (dropped.storage() != probs.storage()) ctx.save(dropped, "dropout.output");
  Tensor out = rt_.activation({q.dim(0), q.dim(1), s, dv}, path_ + ".context");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> pd(rt_, dropped), vv(rt_, v);
    ComputeOut<T> ov(rt_, out);
    rt_.ops<T>().gemm_batched(Trans::N, Trans::N, s, dv, s, pd.data(), s, s * s, vv.data(), dv, s * dv, ov.data(),
                              dv, s * dv, bh, false);
    ov.commit();
  });
  return {out};
}

std::vector<Tensor> CoreAttention::backward(SaveContext& ctx, const std::vector<Tensor>& dout) {
  if (rt_.config.model.flash_attention) return backward_fused(ctx, dout);
  Tensor q = ctx.load("q"), k = ctx.load("k"), v = ctx.load("v"), probs = ctx.load("softmax.output");
  // Without dropout (or at p = 0) the dropped probabilities are the probabilities.
  Tensor dropped = ctx.has_saved("dropout.output") ? ctx.load("dropout.output") : probs;
  const int64_t bh = q.dim(0) * q.dim(1), s = q.dim(2), d = q.dim(3), dvd = v.dim(3);
  Tensor dq = rt_.activation(q.shape(), path_ + ".q.grad");
  Tensor dk = rt_.activation(k.shape(), path_ + ".k.grad");
  Tensor dv = rt_.activation(v.shape(), path_ + ".v.grad");
  // d(dropped probs) in the compute type; dropout backward then works on it.
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> dov(rt_, dout.at(0)), vv(rt_, v), pd(rt_, dropped);
    ComputeOut<T> dvo(rt_, dv);
    // One (bh, s, s) scratch carries d(dropped) -> d(probs) -> d(scores), in place.
    auto g = rt_.workspace.take<T>(static_cast<size_t>(bh * s * s));
    // d(dropped) = dout . v^T ; dv = dropped^T . dout
    ops.gemm_batched(Trans::N, Trans::T, s, s, dvd, dov.data(), dvd, s * dvd, vv.data(), dvd, s * dvd, g.data(), s,
                     s * s, bh, false);
    ops.gemm_batched(Trans::T, Trans::N, s, dvd, s, pd.data(), s, s * s, dov.data(), dvd, s * dvd, dvo.data(), dvd,
                     s * dvd, bh, false);
    dvo.commit();
    if (dropout_active(rt_, dropout_.p)) {
      Tensor mask = ctx.child("dropout").load("mask");
      ops.dropout_apply(g.data(), g.data(), mask.data<uint8_t>(), bh * s * s, dropout_.p);
    }
    const ComputeIn<T> pv(rt_, probs), qv(rt_, q), kv(rt_, k);
    ops.softmax_causal_backward(g.data(), g.data(), pv.data(), bh, s);
    ComputeOut<T> dqo(rt_, dq), dko(rt_, dk);
    // d(scores) * scale, then dq = ds . k ; dk = ds^T . q
    ops.scale(g.data(), g.data(), attention_scale<T>(d), bh * s * s);
    ops.gemm_batched(Trans::N, Trans::N, s, d, s, g.data(), s, s * s, kv.data(), d, s * d, dqo.data(), d, s * d, bh,
                     false);
    ops.gemm_batched(Trans::T, Trans::N, s, d, s, g.data(), s, s * s, qv.data(), d, s * d, dko.data(), d, s * d, bh,
                     false);
    dqo.commit();
    dko.commit();
  });
  return {dq, dk, dv};
}

}  // namespace rcts
