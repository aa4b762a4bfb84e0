// The loss and the optimizer step, CPU reference kernels (float and double).
//
// mse_loss: 0.5 * mean((y - target)^2) in T: acc = sum_i e_i * e_i with e_i = y_i - t_i,
// accumulated from 0 in index order i = 0..n-1; result = (acc * 0.5) / n.
// mse_loss_backward: dy_i = (y_i - t_i) / n (written).
// sgd_step: w_i = w_i - g_i * lr (the product rounded, then the difference); with the
// power-of-two rate rcts uses, the product is exact.
// Sequential loops: the loss is one reduction in index order; the rest are cheap.
#pragma once
#include <cstdint>

namespace rcts::cpu {

template <typename T>
T mse_loss(const T* y, const T* target, int64_t n);

template <typename T>
void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n);

template <typename T>
void sgd_step(T* w, const T* g, int64_t n, T lr);

}  // namespace rcts::cpu
