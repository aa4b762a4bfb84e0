// Element-wise CPU kernels; see elementwise.hpp.
#include "kernels/cpu/elementwise.hpp"

#include <cstring>

#include "kernels/common/bf16.hpp"

namespace rcts::cpu {
namespace {
constexpr int64_t kEwParallelMin = 1 << 15;  // below this many elements, run on one thread
constexpr int64_t kEwColBlock = 64;          // columns per task in bias_backward
}  // namespace

template <typename T>
void add(T* out, const T* a, const T* b, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kEwParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void add_inplace(T* a, const T* b, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kEwParallelMin)
  for (int64_t i = 0; i < n; ++i) a[i] = a[i] + b[i];
}

template <typename T>
void bias_add(T* out, const T* inp, const T* bias, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C >= kEwParallelMin)
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = 0; c < C; ++c) out[r * C + c] = inp[r * C + c] + bias[c];
}

template <typename T>
void bias_backward(T* dbias, const T* dout, int64_t N, int64_t C) {
  const int64_t nblocks = (C + kEwColBlock - 1) / kEwColBlock;
#pragma omp parallel for schedule(static) if (N * C >= kEwParallelMin)
  for (int64_t blk = 0; blk < nblocks; ++blk) {
    const int64_t c0 = blk * kEwColBlock;
    const int64_t c1 = c0 + kEwColBlock < C ? c0 + kEwColBlock : C;
    T acc[kEwColBlock] = {};
    for (int64_t r = 0; r < N; ++r)
      for (int64_t c = c0; c < c1; ++c) acc[c - c0] += dout[r * C + c];
    for (int64_t c = c0; c < c1; ++c) dbias[c] += acc[c - c0];
  }
}

template <typename T>
void scale(T* out, const T* inp, T s, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kEwParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = inp[i] * s;
}

template <typename T>
void copy(T* out, const T* inp, int64_t n) {
  if (out != inp && n > 0) std::memmove(out, inp, static_cast<size_t>(n) * sizeof(T));
}

template <typename T>
void sum_blocks(T* out, const T* blocks, int64_t n, const int* order, int nblocks) {
  if (nblocks <= 0 || n <= 0) return;
  const T* first = blocks + static_cast<int64_t>(order[0]) * n;
  for (int64_t i = 0; i < n; ++i) out[i] = first[i];
  for (int k = 1; k < nblocks; ++k) {
    const T* b = blocks + static_cast<int64_t>(order[k]) * n;
    for (int64_t i = 0; i < n; ++i) out[i] = out[i] + b[i];
  }
}

void round_to_bf16(float* x, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kEwParallelMin)
  for (int64_t i = 0; i < n; ++i) x[i] = round_bf16(x[i]);
}

template void add<float>(float*, const float*, const float*, int64_t);
template void add<double>(double*, const double*, const double*, int64_t);
template void add_inplace<float>(float*, const float*, int64_t);
template void add_inplace<double>(double*, const double*, int64_t);
template void bias_add<float>(float*, const float*, const float*, int64_t, int64_t);
template void bias_add<double>(double*, const double*, const double*, int64_t, int64_t);
template void bias_backward<float>(float*, const float*, int64_t, int64_t);
template void bias_backward<double>(double*, const double*, int64_t, int64_t);
template void scale<float>(float*, const float*, float, int64_t);
template void scale<double>(double*, const double*, double, int64_t);
template void copy<float>(float*, const float*, int64_t);
template void copy<double>(double*, const double*, int64_t);
template void sum_blocks<float>(float*, const float*, int64_t, const int*, int);
template void sum_blocks<double>(double*, const double*, int64_t, const int*, int);

}  // namespace rcts::cpu
