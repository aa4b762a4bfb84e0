// LayerNorm and the causal softmax, one row (or one column) at a time, with the orders
// of kernels/cpu/layernorm.hpp and softmax.hpp.
#pragma once
#include <cstdint>

#include "kernels/common/detmath.hpp"
#include "kernels/exact/arith.hpp"

namespace rcts::exact {

// mean and rstd of one row: sums from 0 in column order, two-pass biased variance,
// rstd = 1 / sqrt(var + eps) with eps already in T.
template <typename T>
RCTS_HD inline void ln_row_stats(const T* x, int64_t C, T eps, T& mean, T& rstd) {
  T sum = 0;
  for (int64_t c = 0; c < C; ++c) sum += x[c];
  const T m = sum / static_cast<T>(C);
  T sq = 0;
  for (int64_t c = 0; c < C; ++c) {
    const T d = x[c] - m;
    sq += d * d;
  }
  const T var = sq / static_cast<T>(C);
  mean = m;
  rstd = static_cast<T>(1) / exact::sqrt(var + eps);
}

template <typename T>
RCTS_HD inline void layernorm_forward_row(T* y, const T* x, const T* weight, const T* bias, int64_t C, T eps) {
  T mean, rstd;
  ln_row_stats(x, C, eps, mean, rstd);
  for (int64_t c = 0; c < C; ++c) {
    const T n = (x[c] - mean) * rstd;
    y[c] = bias ? n * weight[c] + bias[c] : n * weight[c];
  }
}

// dx of one row; also returns the row's statistics for the parameter-gradient pass.
template <typename T>
RCTS_HD inline void layernorm_input_grad_row(T* dx, const T* dy, const T* x, const T* weight, int64_t C, T eps,
                                             T& mean, T& rstd) {
  ln_row_stats(x, C, eps, mean, rstd);
  T sum_g = 0, sum_gn = 0;
  for (int64_t c = 0; c < C; ++c) {
    const T n = (x[c] - mean) * rstd;
    const T g = dy[c] * weight[c];
    sum_g += g;
    sum_gn += g * n;
  }
  const T mean_g = sum_g / static_cast<T>(C);
  const T mean_gn = sum_gn / static_cast<T>(C);
  for (int64_t c = 0; c < C; ++c) {
    const T n = (x[c] - mean) * rstd;
    const T g = dy[c] * weight[c];
    dx[c] = ((g - mean_g) - n * mean_gn) * rstd;
  }
}

// dweight[c] (and dbias[c]) of one column: the rows' terms summed from 0 in row order,
// then added once; `means`/`rstds` are the rows' statistics.
template <typename T>
RCTS_HD inline void layernorm_param_grad_column(T* dweight, T* dbias, int64_t c, const T* dy, const T* x,
                                                const T* means, const T* rstds, int64_t N, int64_t C) {
  T acc_w = 0, acc_b = 0;
  for (int64_t r = 0; r < N; ++r) {
    const T n = (x[r * C + c] - means[r]) * rstds[r];
    acc_w += dy[r * C + c] * n;
    acc_b += dy[r * C + c];
  }
  dweight[c] += acc_w;
  if (dbias) dbias[c] += acc_b;
}

// Row `i` of one (S, S) causal score matrix: m from x[0] over j <= i, exps and their sum
// from 0 in column order, one division per element, zeros above the diagonal.
// In place is allowed (y may be x).
template <typename T>
RCTS_HD inline void softmax_causal_row(T* y, const T* x, int64_t i, int64_t S) {
  T m = x[0];
  for (int64_t j = 1; j <= i; ++j)
    if (x[j] > m) m = x[j];
  T sum = 0;
  for (int64_t j = 0; j <= i; ++j) {
    const T e = detmath::exp(x[j] - m);
    y[j] = e;
    sum += e;
  }
  for (int64_t j = 0; j <= i; ++j) y[j] = y[j] / sum;
  for (int64_t j = i + 1; j < S; ++j) y[j] = 0;
}

// s = sum_{k<=i} dy[k] * y[k] from 0; dx[j] = y[j] * (dy[j] - s) for j <= i, else 0.
// dx may be dy.
template <typename T>
RCTS_HD inline void softmax_causal_backward_row(T* dx, const T* dy, const T* y, int64_t i, int64_t S) {
  T s = 0;
  for (int64_t k = 0; k <= i; ++k) s += dy[k] * y[k];
  for (int64_t j = 0; j <= i; ++j) dx[j] = y[j] * (dy[j] - s);
  for (int64_t j = i + 1; j < S; ++j) dx[j] = 0;
}

}  // namespace rcts::exact
