// MoE arithmetic kernels; see moe.hpp. The row softmax, the top-k scatter and the combine
// run the exact tier's bodies (kernels/exact/moe.hpp), the one definition cpu-exact and
// the CUDA exact tier run too. Top-k selection and the aux loss keep host forms with the
// same order: top-k refuses a bad k with a message and takes any number of experts (the
// exact body stops at kMaxExperts), the aux loss counts assignments once instead of per
// expert (integer counts: the same bits).
#include "kernels/cpu/moe.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/exact/moe.hpp"

namespace rcts::cpu {

template <typename T>
void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) exact::row_softmax_row(out + r * cols, in + r * cols, cols);
}

template <typename T>
void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) exact::row_softmax_backward_row(din + r * cols, dout + r * cols, out + r * cols, cols);
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
  for (int64_t t = 0; t < tokens; ++t) exact::topk_scatter_row(dprobs + t * experts, topk + t * k, dweights + t * k, experts, k);
}

template <typename T>
void moe_combine(T* out, const T* weights, const T* expert_out, const int64_t* position, const T* shared,
                 int64_t tokens, int64_t K, int64_t h) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < h; ++i) out[t * h + i] = exact::moe_combine_element(weights, expert_out, position, shared, t, i, K, h);
}

template <typename T>
void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                          const int64_t* position, int64_t tokens, int64_t K, int64_t h) {
  for (int64_t a = 0; a < tokens * K; ++a)
    exact::moe_combine_backward_assignment(dexpert, dweights, dout, weights, expert_out, position, a, K, h);
}

template <typename T>
void moe_input_grad(T* dx, const T* dsent, const int64_t* position, const T* drouter, const T* dshared,
                    int64_t tokens, int64_t K, int64_t h) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < h; ++i) dx[t * h + i] = exact::moe_input_grad_element(dsent, position, drouter, dshared, t, i, K, h);
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
