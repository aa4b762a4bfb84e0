#include "reference/modules/core_attention.hpp"

#include <cmath>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/dropout.hpp"
#include "kernels/cpu/softmax.hpp"
#include "reference/modules/compute.hpp"

namespace rcts {

using cpu::Trans;

CoreAttention::CoreAttention(Runtime& rt, std::string path)
    : rt_(rt), path_(std::move(path)),
      dropout_{path_ + ".dropout", "attention", rt.config.model.attention_dropout} {}

namespace {
// Heads run in parallel only when there is enough work to pay for a parallel region.
constexpr int64_t kHeadsParallelMin = int64_t{1} << 16;
// 1/sqrt(d) computed in double (sqrt and division are correctly rounded), rounded once.
template <typename T> T attention_scale(int64_t d) { return static_cast<T>(1.0 / std::sqrt(static_cast<double>(d))); }
}  // namespace

std::vector<Tensor> CoreAttention::forward(SaveContext& ctx, const std::vector<Tensor>& in) {
  rt_.counters.count_forward(path_ + ".core");
  const Tensor &q = in.at(0), &k = in.at(1), &v = in.at(2);
  const int64_t bh = q.dim(0) * q.dim(1), s = q.dim(2), d = q.dim(3);
  ctx.save(q, "q");
  ctx.save(k, "k");
  ctx.save(v, "v");
  Tensor probs = rt_.activation({q.dim(0), q.dim(1), s, s}, path_ + ".softmax.output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> qv(rt_.workspace, q), kv(rt_.workspace, k);
    // Scores land in the probabilities' buffer; the softmax then runs in place.
    ComputeOut<T> pv(rt_.workspace, probs);
    const T scale = attention_scale<T>(d);
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h) {
      T* sc = pv.data() + h * s * s;
      cpu::gemm<T>(Trans::N, Trans::T, s, s, d, qv.data() + h * s * d, d, kv.data() + h * s * d, d, sc, s, false);
      for (int64_t i = 0; i < s * s; ++i) sc[i] *= scale;
    }
    cpu::softmax_causal_forward(pv.data(), pv.data(), bh, s);
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
  Tensor out = rt_.activation(q.shape(), path_ + ".context");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> pd(rt_.workspace, dropped), vv(rt_.workspace, v);
    ComputeOut<T> ov(rt_.workspace, out);
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h)
      cpu::gemm<T>(Trans::N, Trans::N, s, d, s, pd.data() + h * s * s, s, vv.data() + h * s * d, d,
                   ov.data() + h * s * d, d, false);
    ov.commit();
  });
  return {out};
}

std::vector<Tensor> CoreAttention::backward(SaveContext& ctx, const std::vector<Tensor>& dout) {
  Tensor q = ctx.load(0), k = ctx.load(1), v = ctx.load(2), probs = ctx.load(3);
  const bool dropped_saved = ctx.num_saved() > 4;
  Tensor dropped = dropped_saved ? ctx.load(4) : probs;
  const int64_t bh = q.dim(0) * q.dim(1), s = q.dim(2), d = q.dim(3);
  Tensor dq = rt_.activation(q.shape(), path_ + ".q.grad");
  Tensor dk = rt_.activation(k.shape(), path_ + ".k.grad");
  Tensor dv = rt_.activation(v.shape(), path_ + ".v.grad");
  // d(dropped probs) in the compute type; dropout backward then works on it.
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> dov(rt_.workspace, dout.at(0)), vv(rt_.workspace, v), pd(rt_.workspace, dropped);
    ComputeOut<T> dvo(rt_.workspace, dv);
    // One (bh, s, s) scratch carries d(dropped) -> d(probs) -> d(scores), in place.
    auto g = rt_.workspace.take<T>(static_cast<size_t>(bh * s * s));
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h) {
      // d(dropped) = dout . v^T ; dv = dropped^T . dout
      cpu::gemm<T>(Trans::N, Trans::T, s, s, d, dov.data() + h * s * d, d, vv.data() + h * s * d, d,
                   g.data() + h * s * s, s, false);
      cpu::gemm<T>(Trans::T, Trans::N, s, d, s, pd.data() + h * s * s, s, dov.data() + h * s * d, d,
                   dvo.data() + h * s * d, d, false);
    }
    dvo.commit();
    if (dropout_active(rt_, dropout_.p)) {
      Tensor mask = ctx.child("dropout").load(0);
      cpu::dropout_backward(g.data(), g.data(), mask.data<uint8_t>(), bh * s * s, dropout_.p);
    }
    const ComputeIn<T> pv(rt_.workspace, probs), qv(rt_.workspace, q), kv(rt_.workspace, k);
    cpu::softmax_causal_backward(g.data(), g.data(), pv.data(), bh, s);
    ComputeOut<T> dqo(rt_.workspace, dq), dko(rt_.workspace, dk);
    const T scale = attention_scale<T>(d);
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h) {
      T* dsh = g.data() + h * s * s;
      for (int64_t i = 0; i < s * s; ++i) dsh[i] *= scale;
      // dq = ds . k ; dk = ds^T . q
      cpu::gemm<T>(Trans::N, Trans::N, s, d, s, dsh, s, kv.data() + h * s * d, d, dqo.data() + h * s * d, d, false);
      cpu::gemm<T>(Trans::T, Trans::N, s, d, s, dsh, s, qv.data() + h * s * d, d, dko.data() + h * s * d, d, false);
    }
    dqo.commit();
    dko.commit();
  });
  return {dq, dk, dv};
}

}  // namespace rcts
