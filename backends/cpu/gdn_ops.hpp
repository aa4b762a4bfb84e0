// The gated delta net ops (design §15) of both host backends: the cpu kernels in
// kernels/cpu/gdn.* already loop over the exact tier's per-output bodies, so the cpu and
// cpu-exact backends share them through this base instead of repeating the forwarding.
#pragma once
#include "kernels/cpu/gdn.hpp"
#include "reference/backend/backend.hpp"

namespace rcts::cpu {

template <typename T>
class GdnOpsOnHost : public Ops<T> {
 public:
  void causal_conv_silu_forward(T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S, int64_t D,
                                int64_t K) override {
    cpu::causal_conv_silu_forward(out, inp, weight, B, H, S, D, K);
  }
  void causal_conv_silu_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B,
                                 int64_t H, int64_t S, int64_t D, int64_t K) override {
    cpu::causal_conv_silu_backward(dinp, dweight, dout, inp, weight, B, H, S, D, K);
  }
  void gated_delta_rule_forward(T* out, const T* q, const T* k, const T* v, const T* a, const T* b, const T* A_log,
                                const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk,
                                int64_t Dv) override {
    cpu::gated_delta_rule_forward(out, q, k, v, a, b, A_log, dt_bias, B, Hk, Hv, S, Dk, Dv);
  }
  void gated_delta_rule_backward(T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, const T* dout, const T* q,
                                 const T* k, const T* v, const T* a, const T* b, const T* A_log, const T* dt_bias,
                                 int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk, int64_t Dv) override {
    cpu::gated_delta_rule_backward(dq, dk, dv, da, db, dA_log, ddt_bias, dout, q, k, v, a, b, A_log, dt_bias, B, Hk, Hv,
                                   S, Dk, Dv);
  }
  void gated_rmsnorm_forward(T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D,
                             double eps) override {
    cpu::gated_rmsnorm_forward(out, x, z, weight, N, D, eps);
  }
  void gated_rmsnorm_backward(T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z, const T* weight,
                              int64_t N, int64_t D, double eps) override {
    cpu::gated_rmsnorm_backward(dx, dz, dweight, dout, x, z, weight, N, D, eps);
  }
};

}  // namespace rcts::cpu
