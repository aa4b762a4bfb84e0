// Causal softmax CPU kernels; see softmax.hpp for the formulas and the reduction orders.
#include "kernels/cpu/softmax.hpp"

#include "kernels/common/detmath.hpp"

namespace rcts::cpu {
namespace {
constexpr int64_t kSmParallelMin = 1 << 14;  // below this many elements, run on one thread
}

template <typename T>
void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S) {
  const int64_t rows = BH * S;
#pragma omp parallel for schedule(static) if (rows * S >= kSmParallelMin)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t i = row % S;
    const T* x = inp + row * S;
    T* y = out + row * S;
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
}

template <typename T>
void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) {
  const int64_t rows = BH * S;
#pragma omp parallel for schedule(static) if (rows * S >= kSmParallelMin)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t i = row % S;
    const T* dy = dout + row * S;
    const T* y = out + row * S;
    T* dx = dinp + row * S;
    T s = 0;
    for (int64_t k = 0; k <= i; ++k) s += dy[k] * y[k];
    for (int64_t j = 0; j <= i; ++j) dx[j] = y[j] * (dy[j] - s);
    for (int64_t j = i + 1; j < S; ++j) dx[j] = 0;
  }
}

template void softmax_causal_forward<float>(float*, const float*, int64_t, int64_t);
template void softmax_causal_forward<double>(double*, const double*, int64_t, int64_t);
template void softmax_causal_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void softmax_causal_backward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace rcts::cpu
