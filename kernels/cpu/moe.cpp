// MoE arithmetic kernels; see moe.hpp.
#include "kernels/cpu/moe.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/detmath.hpp"

namespace rcts::cpu {

template <typename T>
void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) {
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
void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) {
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
void topk_row(const T* probs, int64_t experts, int64_t k, int32_t* out) {
  if (k < 1 || k > experts)
    throw std::invalid_argument("moe top-k: k = " + std::to_string(k) + " must be in [1, " + std::to_string(experts) +
                                "] (the number of experts)");
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
void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) {
  for (int64_t t = 0; t < tokens; ++t) {
    topk_row(probs + t * experts, experts, k, topk + t * k);
    for (int64_t j = 0; j < k; ++j) weights[t * k + j] = probs[t * experts + topk[t * k + j]];
  }
}

template <typename T>
T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k, double coeff) {
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

template <typename T>
void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts, int64_t k) {
  for (int64_t i = 0; i < tokens * experts; ++i) dprobs[i] = T(0);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) dprobs[t * experts + topk[t * k + j]] = dweights[t * k + j];
}

template <typename T>
void moe_combine(T* out, const T* weights, const T* expert_out, const int64_t* position, const T* shared,
                 int64_t tokens, int64_t K, int64_t h) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < h; ++i) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) acc = acc + weights[t * K + k] * expert_out[position[t * K + k] * h + i];
      if (shared) acc = acc + shared[t * h + i];
      out[t * h + i] = acc;
    }
}

template <typename T>
void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                          const int64_t* position, int64_t tokens, int64_t K, int64_t h) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t a = t * K + k, row = position[a];
      T dot = 0;
      for (int64_t i = 0; i < h; ++i) {
        const T g = dout[t * h + i];
        dexpert[row * h + i] = weights[a] * g;
        dot = dot + g * expert_out[row * h + i];
      }
      dweights[a] = dot;
    }
}

template <typename T>
void moe_input_grad(T* dx, const T* dsent, const int64_t* position, const T* drouter, const T* dshared,
                    int64_t tokens, int64_t K, int64_t h) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < h; ++i) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) acc = acc + dsent[position[t * K + k] * h + i];
      acc = acc + drouter[t * h + i];
      if (dshared) acc = acc + dshared[t * h + i];
      dx[t * h + i] = acc;
    }
}

#define RCTS_MOE_KERNELS(T)                                                                                       \
  template void row_softmax_forward<T>(T*, const T*, int64_t, int64_t);                                           \
  template void row_softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);                                \
  template void topk_row<T>(const T*, int64_t, int64_t, int32_t*);                                                \
  template void topk_select<T>(int32_t*, T*, const T*, int64_t, int64_t, int64_t);                                \
  template T aux_loss<T>(const T*, const int32_t*, int64_t, int64_t, int64_t, double);                            \
  template void topk_scatter<T>(T*, const int32_t*, const T*, int64_t, int64_t, int64_t);                         \
  template void moe_combine<T>(T*, const T*, const T*, const int64_t*, const T*, int64_t, int64_t, int64_t);      \
  template void moe_combine_backward<T>(T*, T*, const T*, const T*, const T*, const int64_t*, int64_t, int64_t,   \
                                        int64_t);                                                                 \
  template void moe_input_grad<T>(T*, const T*, const int64_t*, const T*, const T*, int64_t, int64_t, int64_t);
RCTS_MOE_KERNELS(float)
RCTS_MOE_KERNELS(double)
#undef RCTS_MOE_KERNELS

}  // namespace rcts::cpu
