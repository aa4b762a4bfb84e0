// LayerNorm CPU kernels; see layernorm.hpp for the formulas and the reduction orders.
// Each row runs the exact tier's row bodies (kernels/exact/norm.hpp), the one definition
// the cpu-exact backend and the CUDA exact tier run too; the parameter-gradient pass
// sums the same per-column terms in the same row order, blocked over columns for cache.
#include "kernels/cpu/layernorm.hpp"

#include <vector>

#include "kernels/exact/norm.hpp"

namespace rcts::cpu {
namespace {

constexpr int64_t kLnColBlock = 64;        // columns per task in the dweight/dbias pass
constexpr int64_t kLnParallelMin = 1 << 14;  // below this many elements, run on one thread

}  // namespace

template <typename T>
void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                       double eps) {
  const T teps = static_cast<T>(eps);
#pragma omp parallel for schedule(static) if (N * C >= kLnParallelMin)
  for (int64_t r = 0; r < N; ++r) exact::layernorm_forward_row(out + r * C, inp + r * C, weight, bias, C, teps);
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        int64_t N, int64_t C, double eps) {
  const T teps = static_cast<T>(eps);
  std::vector<T> means(static_cast<size_t>(N)), rstds(static_cast<size_t>(N));

  // Pass 1, threads over rows: statistics and dinp.
#pragma omp parallel for schedule(static) if (N * C >= kLnParallelMin)
  for (int64_t r = 0; r < N; ++r)
    exact::layernorm_input_grad_row(dinp + r * C, dout + r * C, inp + r * C, weight, C, teps,
                                    means[static_cast<size_t>(r)], rstds[static_cast<size_t>(r)]);

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
