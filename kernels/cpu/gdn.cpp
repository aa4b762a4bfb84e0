// The gated delta net's CPU kernels: host loops over kernels/exact/gdn.hpp's bodies.
#include "kernels/cpu/gdn.hpp"

#include <vector>

#include "kernels/exact/gdn.hpp"

namespace rcts::cpu {

template <typename T>
void causal_conv_silu_forward(T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S, int64_t D,
                              int64_t K) {
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d)
        out[(bh * S + t) * D + d] = exact::conv_silu_forward_element(inp, weight, bh, t, d, H, S, D, K);
}

template <typename T>
void causal_conv_silu_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B, int64_t H,
                               int64_t S, int64_t D, int64_t K) {
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t t = 0; t < S; ++t)
      for (int64_t d = 0; d < D; ++d)
        dinp[(bh * S + t) * D + d] = exact::conv_silu_input_grad_element(dout, inp, weight, bh, t, d, H, S, D, K);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < H * D; ++c)
    for (int64_t j = 0; j < K; ++j) exact::conv_silu_weight_grad_element(dweight, dout, inp, weight, c, j, B, H, S, D, K);
}

template <typename T>
void gated_delta_rule_forward(T* out, const T* q, const T* k, const T* v, const T* a, const T* b, const T* A_log,
                              const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk, int64_t Dv) {
  const exact::GdnDims n{B, Hk, Hv, S, Dk, Dv};
  const int64_t per = exact::gdn_forward_scratch<T>(n);
  std::vector<T> scratch(static_cast<size_t>(B * Hv * per));
#pragma omp parallel for schedule(static)
  for (int64_t x = 0; x < B * Hv; ++x)
    exact::gated_delta_rule_forward_head(out, scratch.data() + x * per, q, k, v, a, b, A_log, dt_bias, x / Hv, x % Hv,
                                         n);
}

template <typename T>
void gated_delta_rule_backward(T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, const T* dout, const T* q,
                               const T* k, const T* v, const T* a, const T* b, const T* A_log, const T* dt_bias,
                               int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk, int64_t Dv) {
  const exact::GdnDims n{B, Hk, Hv, S, Dk, Dv};
  const int64_t per = exact::gdn_backward_scratch<T>(n);
  std::vector<T> scratch(static_cast<size_t>(B * Hv * per));
  std::vector<T> dqv(static_cast<size_t>(B * Hv * S * Dk)), dkv(dqv.size()), dlogA(static_cast<size_t>(B * Hv * S));
#pragma omp parallel for schedule(static)
  for (int64_t x = 0; x < B * Hv; ++x)
    exact::gated_delta_rule_backward_head(dqv.data(), dkv.data(), dv, da, db, dlogA.data(), scratch.data() + x * per,
                                          dout, q, k, v, a, b, A_log, dt_bias, x / Hv, x % Hv, n);
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < B * Hk * S * Dk; ++e) {
    const int64_t i = e % Dk, t = (e / Dk) % S, hk = (e / (Dk * S)) % Hk, bb = e / (Dk * S * Hk);
    dq[e] = exact::gdn_group_sum(dqv.data(), bb, hk, t, i, n);
    dk[e] = exact::gdn_group_sum(dkv.data(), bb, hk, t, i, n);
  }
  for (int64_t h = 0; h < Hv; ++h) exact::gdn_gate_param_grad(dA_log, ddt_bias, dlogA.data(), da, h, n);
}

template <typename T>
void gated_rmsnorm_forward(T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D, double eps) {
  const T e = static_cast<T>(eps);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < N; ++r) exact::gated_rmsnorm_forward_row(out + r * D, x + r * D, z + r * D, weight, D, e);
}

template <typename T>
void gated_rmsnorm_backward(T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z, const T* weight,
                            int64_t N, int64_t D, double eps) {
  const T e = static_cast<T>(eps);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < N; ++r)
    exact::gated_rmsnorm_input_grad_row(dx + r * D, dz + r * D, dout + r * D, x + r * D, z + r * D, weight, D, e);
  for (int64_t c = 0; c < D; ++c) exact::gated_rmsnorm_weight_grad_column(dweight, c, dout, x, z, N, D, e);
}

#define RCTS_GDN_INSTANTIATE(T)                                                                                      \
  template void causal_conv_silu_forward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t);   \
  template void causal_conv_silu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t,       \
                                             int64_t, int64_t);                                                      \
  template void gated_delta_rule_forward<T>(T*, const T*, const T*, const T*, const T*, const T*, const T*,         \
                                            const T*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);        \
  template void gated_delta_rule_backward<T>(T*, T*, T*, T*, T*, T*, T*, const T*, const T*, const T*, const T*,    \
                                             const T*, const T*, const T*, const T*, int64_t, int64_t, int64_t,     \
                                             int64_t, int64_t, int64_t);                                             \
  template void gated_rmsnorm_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, double);               \
  template void gated_rmsnorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, int64_t, int64_t,     \
                                          double);
RCTS_GDN_INSTANTIATE(float)
RCTS_GDN_INSTANTIATE(double)
#undef RCTS_GDN_INSTANTIATE

}  // namespace rcts::cpu
