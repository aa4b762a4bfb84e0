// LayerNorm CPU kernels; see layernorm.hpp for the formulas and the reduction orders.
#include "kernels/cpu/layernorm.hpp"

#include <cmath>
#include <vector>

namespace rcts::cpu {
namespace {

constexpr int64_t kLnColBlock = 64;        // columns per task in the dweight/dbias pass
constexpr int64_t kLnParallelMin = 1 << 14;  // below this many elements, run on one thread

// mean and rstd of one row; the single definition used by forward and backward.
template <typename T>
void ln_row_stats(const T* x, int64_t C, T eps, T& mean, T& rstd) {
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
  rstd = static_cast<T>(1) / std::sqrt(var + eps);
}

}  // namespace

template <typename T>
void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                       double eps) {
  const T teps = static_cast<T>(eps);
#pragma omp parallel for schedule(static) if (N * C >= kLnParallelMin)
  for (int64_t r = 0; r < N; ++r) {
    const T* x = inp + r * C;
    T* y = out + r * C;
    T mean, rstd;
    ln_row_stats(x, C, teps, mean, rstd);
    for (int64_t c = 0; c < C; ++c) {
      const T n = (x[c] - mean) * rstd;
      y[c] = bias ? n * weight[c] + bias[c] : n * weight[c];
    }
  }
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        int64_t N, int64_t C, double eps) {
  const T teps = static_cast<T>(eps);
  std::vector<T> means(static_cast<size_t>(N)), rstds(static_cast<size_t>(N));

  // Pass 1, threads over rows: statistics and dinp.
#pragma omp parallel for schedule(static) if (N * C >= kLnParallelMin)
  for (int64_t r = 0; r < N; ++r) {
    const T* x = inp + r * C;
    const T* dy = dout + r * C;
    T* dx = dinp + r * C;
    T mean, rstd;
    ln_row_stats(x, C, teps, mean, rstd);
    means[static_cast<size_t>(r)] = mean;
    rstds[static_cast<size_t>(r)] = rstd;
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

  // Pass 2, threads over column blocks: dweight/dbias, rows summed in order from 0.
  const int64_t nblocks = (C + kLnColBlock - 1) / kLnColBlock;
#pragma omp parallel for schedule(static) if (N * C >= kLnParallelMin)
  for (int64_t blk = 0; blk < nblocks; ++blk) {
    const int64_t c0 = blk * kLnColBlock;
    const int64_t c1 = c0 + kLnColBlock < C ? c0 + kLnColBlock : C;
    T acc_w[kLnColBlock] = {};
    T acc_b[kLnColBlock] = {};
    for (int64_t r = 0; r < N; ++r) {
      const T* x = inp + r * C;
      const T* dy = dout + r * C;
      const T mean = means[static_cast<size_t>(r)];
      const T rstd = rstds[static_cast<size_t>(r)];
      for (int64_t c = c0; c < c1; ++c) {
        const T n = (x[c] - mean) * rstd;
        acc_w[c - c0] += dy[c] * n;
        acc_b[c - c0] += dy[c];
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      dweight[c] += acc_w[c - c0];
      if (dbias) dbias[c] += acc_b[c - c0];
    }
  }
}

template void layernorm_forward<float>(float*, const float*, const float*, const float*, int64_t, int64_t,
                                       double);
template void layernorm_forward<double>(double*, const double*, const double*, const double*, int64_t,
                                        int64_t, double);
template void layernorm_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                        int64_t, int64_t, double);
template void layernorm_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, int64_t, int64_t, double);

}  // namespace rcts::cpu
