// MoE bodies, with the orders of kernels/cpu/moe.hpp: the router's row softmax, top-k
// of one token, the aux loss (one sequential body), the top-k scatter of one token, and
// the combine of expert outputs (one element, or one (token, slot) for its backward).
#pragma once
#include <cstdint>

#include "kernels/common/detmath.hpp"
#include "kernels/common/host_device.hpp"

namespace rcts::exact {

// The most experts a top-k body can handle (its taken-set is a fixed bit array).
inline constexpr int64_t kMaxExperts = 4096;

template <typename T>
RCTS_HD inline void row_softmax_row(T* y, const T* x, int64_t cols) {
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

template <typename T>
RCTS_HD inline void row_softmax_backward_row(T* dx, const T* dy, const T* p, int64_t cols) {
  T s = 0;
  for (int64_t e = 0; e < cols; ++e) s += dy[e] * p[e];
  for (int64_t e = 0; e < cols; ++e) dx[e] = p[e] * (dy[e] - s);
}

// The k best experts of one token by (prob descending, index ascending), repeated
// scans as on the CPU (strictly greater wins, so equal probabilities keep the lower
// index), and their probabilities as weights. 1 <= k <= experts <= kMaxExperts.
template <typename T>
RCTS_HD inline void topk_row(int32_t* topk, T* weights, const T* probs, int64_t experts, int64_t k) {
  uint64_t taken[kMaxExperts / 64] = {};
  for (int64_t slot = 0; slot < k; ++slot) {
    int64_t best = -1;
    for (int64_t e = 0; e < experts; ++e) {
      if ((taken[e / 64] >> (e % 64)) & 1u) continue;
      if (best < 0 || probs[e] > probs[best]) best = e;
    }
    taken[best / 64] |= uint64_t{1} << (best % 64);
    topk[slot] = static_cast<int32_t>(best);
    weights[slot] = probs[best];
  }
}

// (coeff * E) * sum_e f_e * P_e over all tokens: sequential, experts in order.
template <typename T>
RCTS_HD inline T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
                          double coeff) {
  if (tokens == 0) return T(0);
  T total = 0;
  for (int64_t e = 0; e < experts; ++e) {
    int64_t count = 0;
    for (int64_t i = 0; i < tokens * k; ++i) count += topk[i] == e ? 1 : 0;
    T psum = 0;
    for (int64_t t = 0; t < tokens; ++t) psum += probs[t * experts + e];
    const T f = static_cast<T>(count) / static_cast<T>(tokens * k);
    const T P = psum / static_cast<T>(tokens);
    total += f * P;
  }
  return (static_cast<T>(coeff) * static_cast<T>(experts)) * total;
}

// One token's row of dprobs: zeros, then dweights at the chosen experts (slot order).
template <typename T>
RCTS_HD inline void topk_scatter_row(T* dprobs, const int32_t* topk, const T* dweights, int64_t experts, int64_t k) {
  for (int64_t e = 0; e < experts; ++e) dprobs[e] = T(0);
  for (int64_t j = 0; j < k; ++j) dprobs[topk[j]] = dweights[j];
}

// out[t][i] = (sum_k w[t*K+k] * expert_out[position[t*K+k]][i]) [+ shared[t][i]].
template <typename T>
RCTS_HD inline T moe_combine_element(const T* weights, const T* expert_out, const int64_t* position, const T* shared,
                                     int64_t t, int64_t i, int64_t K, int64_t h) {
  T acc = 0;
  for (int64_t k = 0; k < K; ++k) acc = acc + weights[t * K + k] * expert_out[position[t * K + k] * h + i];
  if (shared) acc = acc + shared[t * h + i];
  return acc;
}

// For assignment a = t*K + k: the expert-output gradient row and the weight gradient.
template <typename T>
RCTS_HD inline void moe_combine_backward_assignment(T* dexpert, T* dweights, const T* dout, const T* weights,
                                                    const T* expert_out, const int64_t* position, int64_t a,
                                                    int64_t K, int64_t h) {
  const int64_t t = a / K, row = position[a];
  T dot = 0;
  for (int64_t i = 0; i < h; ++i) {
    const T g = dout[t * h + i];
    dexpert[row * h + i] = weights[a] * g;
    dot = dot + g * expert_out[row * h + i];
  }
  dweights[a] = dot;
}

// dx[t][i] = ((sum_k dsent[position[t*K+k]][i]) + drouter[t][i]) [+ dshared[t][i]].
template <typename T>
RCTS_HD inline T moe_input_grad_element(const T* dsent, const int64_t* position, const T* drouter, const T* dshared,
                                        int64_t t, int64_t i, int64_t K, int64_t h) {
  T acc = 0;
  for (int64_t k = 0; k < K; ++k) acc = acc + dsent[position[t * K + k] * h + i];
  acc = acc + drouter[t * h + i];
  if (dshared) acc = acc + dshared[t * h + i];
  return acc;
}

}  // namespace rcts::exact
