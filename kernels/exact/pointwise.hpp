// Element-wise bodies: activations (kernels/cpu/activation.hpp), dropout apply
// (dropout.hpp), add / bias / scale, the ordered rank sum and bias-gradient columns
// (elementwise.hpp), the loss gradient and the SGD step (loss.hpp), dtype conversion.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16.hpp"
#include "kernels/common/convert.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/common/dropout_rule.hpp"

namespace rcts::exact {

// The GeLU literals, each rounded once (decimal -> T) by the compiler.
template <typename T> struct GeluConst;
template <> struct GeluConst<float> {
  static constexpr float k0 = 0.7978845608028654f;  // sqrt(2/pi)
  static constexpr float k1 = 0.044715f;
  static constexpr float k3 = 0.134145f;  // 3 * 0.044715
};
template <> struct GeluConst<double> {
  static constexpr double k0 = 0.7978845608028654;
  static constexpr double k1 = 0.044715;
  static constexpr double k3 = 0.134145;
};

template <typename T>
RCTS_HD inline T gelu_forward(T x) {
  using K = GeluConst<T>;
  const T half = static_cast<T>(0.5), one = static_cast<T>(1);
  const T u = K::k0 * (x + K::k1 * ((x * x) * x));
  const T t = detmath::tanh(u);
  return (half * x) * (one + t);
}

template <typename T>
RCTS_HD inline T gelu_backward(T dy, T x) {
  using K = GeluConst<T>;
  const T half = static_cast<T>(0.5), one = static_cast<T>(1);
  const T u = K::k0 * (x + K::k1 * ((x * x) * x));
  const T t = detmath::tanh(u);
  const T grad = half * (one + t) + ((half * x) * (one - t * t)) * (K::k0 * (one + K::k3 * (x * x)));
  return dy * grad;
}

template <typename T>
RCTS_HD inline T swiglu_forward(T a, T b) {
  const T s = detmath::sigmoid(a);
  return (a * s) * b;
}

template <typename T>
RCTS_HD inline void swiglu_backward(T dy, T a, T b, T& da, T& db) {
  const T one = static_cast<T>(1);
  const T s = detmath::sigmoid(a);
  const T dsilu = s * (one + a * (one - s));
  da = (dy * b) * dsilu;
  db = dy * (a * s);
}

// out = (x * mask) * 1/(1-p); p == 0: x itself; p == 1: x * 0 (no infinite scale).
// `scale` is dropout_scale<T>(p).
template <typename T>
RCTS_HD inline T dropout_scale(double p) {
  return p < 1.0 ? static_cast<T>(dropout_rule::scale(p)) : static_cast<T>(0);
}
template <typename T>
RCTS_HD inline T dropout_apply(T x, uint8_t mask, double p, T scale) {
  if (p == 0.0) return x;
  return p < 1.0 ? (x * static_cast<T>(mask)) * scale : x * static_cast<T>(0);
}

// The mask byte of element i of a draw at (seed, offset): dropout_rule::keep, with the
// all-keep / all-drop thresholds of kernels/cpu/dropout.hpp.
RCTS_HD inline uint8_t dropout_mask(uint64_t seed, uint64_t offset, int64_t i, uint32_t threshold) {
  if (threshold == 0) return 1;
  if (threshold > 0xFFFFFFu) return 0;
  return dropout_rule::keep(seed, offset, i, threshold);
}

// dbias[c] += sum_r dout[r][c], the sum from 0 in row order.
template <typename T>
RCTS_HD inline void bias_grad_column(T* dbias, const T* dout, int64_t c, int64_t N, int64_t C) {
  T acc = 0;
  for (int64_t r = 0; r < N; ++r) acc += dout[r * C + c];
  dbias[c] += acc;
}

// Element i of the ordered rank sum: blocks[order[0]][i] + blocks[order[1]][i] + ...
template <typename T>
RCTS_HD inline T sum_blocks(const T* blocks, int64_t n, const int* order, int nblocks, int64_t i) {
  T acc = blocks[static_cast<int64_t>(order[0]) * n + i];
  for (int k = 1; k < nblocks; ++k) acc = acc + blocks[static_cast<int64_t>(order[k]) * n + i];
  return acc;
}

// 0.5 * mean((y - t)^2): one sum from 0 in index order (a single sequential body).
template <typename T>
RCTS_HD inline T mse_loss(const T* y, const T* target, int64_t n) {
  T acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T e = y[i] - target[i];
    acc += e * e;
  }
  return acc * static_cast<T>(0.5) / static_cast<T>(n);
}
template <typename T>
RCTS_HD inline T mse_loss_grad(T y, T t, int64_t n) {
  return (y - t) / static_cast<T>(n);
}
template <typename T>
RCTS_HD inline T sgd_update(T w, T g, T lr) {
  return w - g * lr;
}

// One element of a dtype conversion: the shared rule (kernels/common/convert.hpp).
template <typename D, typename S>
RCTS_HD inline D convert(S x) {
  return convert_element<D, S>(x);
}

}  // namespace rcts::exact
