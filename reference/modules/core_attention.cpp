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
    const ComputeIn<T> qv(q), kv(k);
    std::vector<T> scores(static_cast<size_t>(bh * s * s));
    ComputeOut<T> pv(probs);
    const T scale = attention_scale<T>(d);
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h) {
      T* sc = scores.data() + h * s * s;
      cpu::gemm<T>(Trans::N, Trans::T, s, s, d, qv.data() + h * s * d, d, kv.data() + h * s * d, d, sc, s, false);
      for (int64_t i = 0; i < s * s; ++i) sc[i] *= scale;
    }
    cpu::softmax_causal_forward(pv.data(), scores.data(), bh, s);
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
    const ComputeIn<T> pd(dropped), vv(v);
    ComputeOut<T> ov(out);
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
    const ComputeIn<T> dov(dout.at(0)), vv(v), pd(dropped);
    std::vector<T> dpd(static_cast<size_t>(bh * s * s)), dvv(vv.size());
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h) {
      // d(dropped) = dout . v^T ; dv = dropped^T . dout
      cpu::gemm<T>(Trans::N, Trans::T, s, s, d, dov.data() + h * s * d, d, vv.data() + h * s * d, d,
                   dpd.data() + h * s * s, s, false);
      cpu::gemm<T>(Trans::T, Trans::N, s, d, s, pd.data() + h * s * s, s, dov.data() + h * s * d, d,
                   dvv.data() + h * s * d, d, false);
    }
    store(dv, dvv.data());
    std::vector<T> dp(dpd.size());
    if (dropout_active(rt_, dropout_.p)) {
      Tensor mask = ctx.child("dropout").load(0);
      cpu::dropout_backward(dp.data(), dpd.data(), mask.data<uint8_t>(), bh * s * s, dropout_.p);
    } else {
      dp = dpd;
    }
    const ComputeIn<T> pv(probs), qv(q), kv(k);
    std::vector<T> ds(dp.size()), dqv(qv.size()), dkv(kv.size());
    cpu::softmax_causal_backward(ds.data(), dp.data(), pv.data(), bh, s);
    const T scale = attention_scale<T>(d);
#pragma omp parallel for schedule(static) if (bh * s * s * d >= kHeadsParallelMin)
    for (int64_t h = 0; h < bh; ++h) {
      T* dsh = ds.data() + h * s * s;
      for (int64_t i = 0; i < s * s; ++i) dsh[i] *= scale;
      // dq = ds . k ; dk = ds^T . q
      cpu::gemm<T>(Trans::N, Trans::N, s, d, s, dsh, s, kv.data() + h * s * d, d, dqv.data() + h * s * d, d, false);
      cpu::gemm<T>(Trans::T, Trans::N, s, d, s, dsh, s, qv.data() + h * s * d, d, dkv.data() + h * s * d, d, false);
    }
    store(dq, dqv.data());
    store(dk, dkv.data());
  });
  return {dq, dk, dv};
}

}  // namespace rcts
