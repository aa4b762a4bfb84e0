#include "reference/modules/moe_router.hpp"

#include "kernels/common/detmath.hpp"
#include "kernels/cpu/gemm.hpp"
#include "reference/modules/compute.hpp"

namespace rcts {

using cpu::Trans;

template <typename T>
void moe_topk_select(const T* probs, int64_t experts, int64_t k, int32_t* out) {
  RCTS_CHECK(k >= 1 && k <= experts, "moe top-k: k = " + std::to_string(k) + " must be in [1, " +
                                         std::to_string(experts) + "] (the number of experts)");
  // Selection by repeated scans: O(k * E), and the order is the comparator's alone.
  std::vector<bool> taken(static_cast<size_t>(experts), false);
  for (int64_t slot = 0; slot < k; ++slot) {
    int64_t best = -1;
    for (int64_t e = 0; e < experts; ++e) {
      if (taken[static_cast<size_t>(e)]) continue;
      // Strictly greater wins; equal keeps the earlier (lower) index.
      if (best < 0 || probs[e] > probs[best]) best = e;
    }
    taken[static_cast<size_t>(best)] = true;
    out[slot] = static_cast<int32_t>(best);
  }
}

template <typename T>
void moe_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* x = in + r * cols;
    T* y = out + r * cols;
    T m = x[0];
    for (int64_t e = 1; e < cols; ++e)
      if (x[e] > m) m = x[e];
    T z = 0;
    for (int64_t e = 0; e < cols; ++e) {
      y[e] = detmath::exp(x[e] - m);
      z += y[e];
    }
    for (int64_t e = 0; e < cols; ++e) y[e] = y[e] / z;
  }
}

template <typename T>
void moe_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dy = dout + r * cols;
    const T* p = out + r * cols;
    T* dx = din + r * cols;
    T s = 0;
    for (int64_t e = 0; e < cols; ++e) s += dy[e] * p[e];
    for (int64_t e = 0; e < cols; ++e) dx[e] = p[e] * (dy[e] - s);
  }
}

template <typename T>
T moe_aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k, double coeff) {
  if (tokens == 0) return T(0);
  std::vector<int64_t> count(static_cast<size_t>(experts), 0);
  for (int64_t i = 0; i < tokens * k; ++i) ++count[static_cast<size_t>(topk[i])];
  T total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    T psum = 0;
    for (int64_t t = 0; t < tokens; ++t) psum += probs[t * experts + e];
    const T f = static_cast<T>(count[static_cast<size_t>(e)]) / static_cast<T>(tokens * k);
    const T P = psum / static_cast<T>(tokens);
    total += f * P;
  }
  return (static_cast<T>(coeff) * static_cast<T>(experts)) * total;
}

#define RCTS_MOE_ROUTER_INSTANTIATE(T)                                                                   \
  template void moe_topk_select<T>(const T*, int64_t, int64_t, int32_t*);                                \
  template void moe_softmax_forward<T>(T*, const T*, int64_t, int64_t);                                  \
  template void moe_softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);                       \
  template T moe_aux_loss<T>(const T*, const int32_t*, int64_t, int64_t, int64_t, double);
RCTS_MOE_ROUTER_INSTANTIATE(float)
RCTS_MOE_ROUTER_INSTANTIATE(double)
#undef RCTS_MOE_ROUTER_INSTANTIATE

MoeRouter::MoeRouter(Runtime& rt, const std::string& moe_path)
    : rt_(rt),
      path_(moe_path + ".router"),
      aux_key_(moe_path + ".aux_loss"),
      experts_(rt.config.model.num_moe_experts),
      hidden_(rt.config.model.hidden_size),
      topk_(rt.config.model.moe_router_topk) {
  RCTS_CHECK(experts_ >= 1, path_ + ": model.num_moe_experts = " + std::to_string(experts_) + " must be >= 1");
  RCTS_CHECK(topk_ >= 1 && topk_ <= experts_, path_ + ": model.moe_router_topk = " + std::to_string(topk_) +
                                                  " must be in [1, model.num_moe_experts = " +
                                                  std::to_string(experts_) + "]");
  weight_ = make_parameter(rt, path_ + ".weight", {experts_, hidden_}, Init::uniform_fan_in, hidden_);
  weight_.sequence_parallel = rt.config.parallel.sequence_parallel && rt.tp_group->size() > 1;
}

RouterOutput MoeRouter::forward(SaveContext& ctx, const Tensor& x) {
  RCTS_CHECK(x.shape().size() == 2 && x.dim(1) == hidden_,
             path_ + ": input '" + x.name() + "' has shape " + shape_str(x.shape()) + ", expected (tokens, " +
                 std::to_string(hidden_) + ")");
  const int64_t tokens = x.dim(0);
  RouterOutput r;
  r.topk = Tensor::empty({tokens, topk_}, DType::i32, rt_.place(), path_ + ".topk");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    r.probs = Tensor::empty({tokens, experts_}, dtype_of<T>(), rt_.place(), path_ + ".probs");
    r.weights = Tensor::empty({tokens, topk_}, dtype_of<T>(), rt_.place(), path_ + ".weights");
    const ComputeIn<T> xv(rt_.workspace, x);
    auto logits = rt_.workspace.take<T>(static_cast<size_t>(tokens * experts_));
    cpu::gemm<T>(Trans::N, Trans::T, tokens, experts_, hidden_, xv.data(), hidden_, param_data<T>(weight_.value),
                 hidden_, logits.data(), experts_, false);
    T* p = r.probs.data<T>();
    moe_softmax_forward(p, logits.data(), tokens, experts_);
    int32_t* sel = r.topk.data<int32_t>();
    T* w = r.weights.data<T>();
    for (int64_t t = 0; t < tokens; ++t) {
      moe_topk_select(p + t * experts_, experts_, topk_, sel + t * topk_);
      for (int64_t k = 0; k < topk_; ++k) w[t * topk_ + k] = p[t * experts_ + sel[t * topk_ + k]];
    }
    if (rt_.training())
      rt_.add_side_effect(aux_key_, static_cast<double>(moe_aux_loss(p, sel, tokens, experts_, topk_,
                                                                     rt_.config.model.moe_aux_loss_coeff)));
  });
  ctx.save(x, "input");
  ctx.save(r.probs, "probs");
  return r;
}

Tensor MoeRouter::backward(SaveContext& ctx, const Tensor& topk, const Tensor& dweights) {
  const Tensor x = ctx.load(0);
  const Tensor probs = ctx.load(1);
  const int64_t tokens = x.dim(0);
  Tensor dx;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const T* p = probs.data<T>();
    const int32_t* sel = topk.data<int32_t>();
    const T* dw = dweights.data<T>();
    auto dprobs = rt_.workspace.zeros<T>(static_cast<size_t>(tokens * experts_));
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t k = 0; k < topk_; ++k) dprobs[static_cast<size_t>(t * experts_ + sel[t * topk_ + k])] = dw[t * topk_ + k];
    auto dlogits = rt_.workspace.take<T>(dprobs.size());
    moe_softmax_backward(dlogits.data(), dprobs.data(), p, tokens, experts_);
    const ComputeIn<T> xv(rt_.workspace, x);
    // dW (E, h) += dlogits^T (E, tokens) . x (tokens, h): tokens in GEMM k order.
    cpu::gemm<T>(Trans::T, Trans::N, experts_, hidden_, tokens, dlogits.data(), experts_, xv.data(), hidden_,
                 param_data<T>(weight_.grad), hidden_, true);
    dx = Tensor::empty({tokens, hidden_}, dtype_of<T>(), rt_.place(), path_ + ".input.grad");
    // dx (tokens, h) = dlogits (tokens, E) . W (E, h)
    cpu::gemm<T>(Trans::N, Trans::N, tokens, hidden_, experts_, dlogits.data(), experts_,
                 param_data<T>(weight_.value), hidden_, dx.data<T>(), hidden_, false);
  });
  return dx;
}

}  // namespace rcts
