// Gated delta net kernels (design §15), CPU: each runs the per-output bodies of
// kernels/exact/gdn.hpp (whose header states every order) over all outputs; threads
// split independent outputs only, so results do not depend on the thread count.
// Layouts: heads (B, H, S, D); conv weights (H*D, K); token rows (N, D).
// Gradients of inputs are written (=); parameter gradients accumulate (+=).
#pragma once
#include <cstdint>

namespace rcts::cpu {

template <typename T>
void causal_conv_silu_forward(T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S, int64_t D,
                              int64_t K);
template <typename T>
void causal_conv_silu_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B, int64_t H,
                               int64_t S, int64_t D, int64_t K);

// q, k (B, Hk, S, Dk); v, out (B, Hv, S, Dv); a, b (B, Hv, S); A_log, dt_bias (Hv).
template <typename T>
void gated_delta_rule_forward(T* out, const T* q, const T* k, const T* v, const T* a, const T* b, const T* A_log,
                              const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk, int64_t Dv);
template <typename T>
void gated_delta_rule_backward(T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, const T* dout, const T* q,
                               const T* k, const T* v, const T* a, const T* b, const T* A_log, const T* dt_bias,
                               int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk, int64_t Dv);

// x, z, out (N, D); weight (D).
template <typename T>
void gated_rmsnorm_forward(T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D, double eps);
template <typename T>
void gated_rmsnorm_backward(T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z, const T* weight,
                            int64_t N, int64_t D, double eps);

}  // namespace rcts::cpu
