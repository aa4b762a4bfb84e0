// Loss and optimizer kernels; see loss.hpp.
#include "kernels/cpu/loss.hpp"

namespace rcts::cpu {

template <typename T>
T mse_loss(const T* y, const T* target, int64_t n) {
  T acc = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T e = y[i] - target[i];
    acc += e * e;
  }
  return acc * static_cast<T>(0.5) / static_cast<T>(n);
}

template <typename T>
void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dy[i] = (y[i] - target[i]) / static_cast<T>(n);
}

template <typename T>
void sgd_step(T* w, const T* g, int64_t n, T lr) {
  for (int64_t i = 0; i < n; ++i) w[i] -= g[i] * lr;
}

template float mse_loss<float>(const float*, const float*, int64_t);
template double mse_loss<double>(const double*, const double*, int64_t);
template void mse_loss_backward<float>(float*, const float*, const float*, int64_t);
template void mse_loss_backward<double>(double*, const double*, const double*, int64_t);
template void sgd_step<float>(float*, const float*, int64_t, float);
template void sgd_step<double>(double*, const double*, int64_t, double);

}  // namespace rcts::cpu
