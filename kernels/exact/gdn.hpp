// Gated delta net (design §15): the per-output bodies of its three op families, in
// the orders below. The CPU kernels (kernels/cpu/gdn.cpp), the cpu-exact backend and
// the CUDA exact tier all run exactly these bodies, so they agree bit for bit.
//
// Layouts: heads (B, H, S, D) row-major ("bh" = b*H + h); token rows (N, D).
// Every sum starts at 0 and adds its terms in the stated index order with plain
// adds of separately rounded products (no FMA). exp, sigmoid and log are detmath's.
//
//  causal conv + SiLU (per channel c = h*D + d, weight w[c*K + j]):
//    pre[t] = sum_{j=0..K-1, t-K+1+j >= 0} w[j] * x[t-K+1+j]   (j increasing)
//    y[t]   = pre[t] * sigmoid(pre[t])
//  gated delta rule (one value head at a time; key head = value head / (Hv/Hk)):
//    qn = q * rsqrt(sum q^2 + 1e-6), kn likewise (FLA's l2norm), q~ = qn * (1/sqrt(Dk))
//    beta = sigmoid(b_raw); x = a_raw + dt_bias; g = -(exp(A_log) * softplus(x));
//    softplus(x) = x > 20 ? x : log(1 + exp(x)); decay = exp(g)
//    per value column j, with S (Dk x Dv) starting at 0:
//      S[:,j] = decay * S[:,j];  u_j = sum_i S[i][j] * kn[i];  d_j = beta * (v_j - u_j)
//      S[:,j] = S[:,j] + kn * d_j;  o_j = sum_i S[i][j] * q~[i]
//  gated RMSNorm (rows of D): r = 1/sqrt(sum x^2 / D + eps); y = ((x * r) * w) * silu(z)
#pragma once
#include <cstdint>

#include "kernels/common/detmath.hpp"
#include "kernels/exact/arith.hpp"

namespace rcts::exact {

template <typename T> RCTS_HD inline T gdn_silu(T x) { return x * detmath::sigmoid(x); }
template <typename T> RCTS_HD inline T gdn_dsilu(T x) {
  const T s = detmath::sigmoid(x);
  return s * (static_cast<T>(1) + x * (static_cast<T>(1) - s));
}
template <typename T> RCTS_HD inline T gdn_softplus(T x) {
  return x > static_cast<T>(20) ? x : detmath::log(static_cast<T>(1) + detmath::exp(x));
}
template <typename T> RCTS_HD inline T gdn_dsoftplus(T x) {
  return x > static_cast<T>(20) ? static_cast<T>(1) : detmath::sigmoid(x);
}

// ---------------------------------------------------------------- causal conv + SiLU
// x, one (S, D) slab of a head; w: this channel's K taps.
template <typename T>
RCTS_HD inline T conv_pre(const T* x, const T* w, int64_t t, int64_t d, int64_t D, int64_t K) {
  T acc = 0;
  for (int64_t j = 0; j < K; ++j) {
    const int64_t src = t - (K - 1) + j;
    if (src >= 0) acc += w[j] * x[src * D + d];
  }
  return acc;
}

// Output element (bh, t, d).
template <typename T>
RCTS_HD inline T conv_silu_forward_element(const T* x, const T* w, int64_t bh, int64_t t, int64_t d, int64_t H,
                                           int64_t S, int64_t D, int64_t K) {
  const int64_t c = (bh % H) * D + d;
  return gdn_silu(conv_pre(x + bh * S * D, w + c * K, t, d, D, K));
}

// dp[t] = dy[t] * silu'(pre[t]) of one channel (recomputed).
template <typename T>
RCTS_HD inline T conv_dpre(const T* dy, const T* x, const T* w, int64_t t, int64_t d, int64_t D, int64_t K) {
  return dy[t * D + d] * gdn_dsilu(conv_pre(x, w, t, d, D, K));
}

// dx element (bh, t, d) = sum_{j=0..K-1, t+K-1-j < S} w[j] * dp[t+K-1-j]   (j increasing)
template <typename T>
RCTS_HD inline T conv_silu_input_grad_element(const T* dy, const T* x, const T* w, int64_t bh, int64_t t, int64_t d,
                                              int64_t H, int64_t S, int64_t D, int64_t K) {
  const int64_t c = (bh % H) * D + d;
  const T* xs = x + bh * S * D;
  const T* dys = dy + bh * S * D;
  const T* wc = w + c * K;
  T acc = 0;
  for (int64_t j = 0; j < K; ++j) {
    const int64_t dst = t + (K - 1) - j;
    if (dst < S) acc += wc[j] * conv_dpre(dys, xs, wc, dst, d, D, K);
  }
  return acc;
}

// dw[c*K + j] += sum over b (outer), t (inner) of dp[b, t] * x[b, t-K+1+j].
template <typename T>
RCTS_HD inline void conv_silu_weight_grad_element(T* dw, const T* dy, const T* x, const T* w, int64_t c, int64_t j,
                                                  int64_t B, int64_t H, int64_t S, int64_t D, int64_t K) {
  const int64_t h = c / D, d = c % D;
  const T* wc = w + c * K;
  T acc = 0;
  for (int64_t b = 0; b < B; ++b) {
    const T* xs = x + (b * H + h) * S * D;
    const T* dys = dy + (b * H + h) * S * D;
    for (int64_t t = 0; t < S; ++t) {
      const int64_t src = t - (K - 1) + j;
      if (src >= 0) acc += conv_dpre(dys, xs, wc, t, d, D, K) * xs[src * D + d];
    }
  }
  dw[c * K + j] += acc;
}

// ---------------------------------------------------------------- gated delta rule
struct GdnDims {
  int64_t B, Hk, Hv, S, Dk, Dv;
};

// The per-token quantities of value head (b, hv) at t. qn, kn: Dk each.
template <typename T> struct GdnStep {
  T rq, rk, beta, x, A, g, decay;
};

template <typename T>
RCTS_HD inline GdnStep<T> gdn_step(T* qn, T* kn, const T* q, const T* k, const T* a, const T* braw, const T* A_log,
                                   const T* dt_bias, int64_t b, int64_t hv, int64_t t, const GdnDims& n) {
  const int64_t hk = hv / (n.Hv / n.Hk);
  const T* qt = q + ((b * n.Hk + hk) * n.S + t) * n.Dk;
  const T* kt = k + ((b * n.Hk + hk) * n.S + t) * n.Dk;
  T sq = 0, sk = 0;
  for (int64_t i = 0; i < n.Dk; ++i) sq += qt[i] * qt[i];
  for (int64_t i = 0; i < n.Dk; ++i) sk += kt[i] * kt[i];
  const T eps = static_cast<T>(1e-6);
  GdnStep<T> st;
  st.rq = static_cast<T>(1) / exact::sqrt(sq + eps);
  st.rk = static_cast<T>(1) / exact::sqrt(sk + eps);
  for (int64_t i = 0; i < n.Dk; ++i) qn[i] = qt[i] * st.rq;
  for (int64_t i = 0; i < n.Dk; ++i) kn[i] = kt[i] * st.rk;
  const int64_t gi = (b * n.Hv + hv) * n.S + t;
  st.beta = detmath::sigmoid(braw[gi]);
  st.x = a[gi] + dt_bias[hv];
  st.A = detmath::exp(A_log[hv]);
  st.g = -(st.A * gdn_softplus(st.x));
  st.decay = detmath::exp(st.g);
  return st;
}

template <typename T> RCTS_HD inline T gdn_scale(int64_t Dk) {
  return static_cast<T>(1) / exact::sqrt(static_cast<T>(Dk));
}

// One step of the recurrence on state Sm (Dk x Dv): Sm becomes S_t; writes o_t (Dv)
// when `o` is not null and d_j (Dv) into `delta`, u_j into `u`.
template <typename T>
RCTS_HD inline void gdn_advance(T* Sm, T* o, T* delta, T* u, const T* qn, const T* kn, const T* vt, const GdnStep<T>& st,
                                T scale, int64_t Dk, int64_t Dv) {
  for (int64_t j = 0; j < Dv; ++j) {
    for (int64_t i = 0; i < Dk; ++i) Sm[i * Dv + j] = st.decay * Sm[i * Dv + j];
    T uj = 0;
    for (int64_t i = 0; i < Dk; ++i) uj += Sm[i * Dv + j] * kn[i];
    const T dj = st.beta * (vt[j] - uj);
    for (int64_t i = 0; i < Dk; ++i) Sm[i * Dv + j] = Sm[i * Dv + j] + kn[i] * dj;
    if (o) {
      T oj = 0;
      for (int64_t i = 0; i < Dk; ++i) oj += Sm[i * Dv + j] * (qn[i] * scale);
      o[j] = oj;
    }
    delta[j] = dj;
    u[j] = uj;
  }
}

// Forward of value head (b, hv): o (B, Hv, S, Dv). scratch: gdn_forward_scratch(n).
template <typename T> RCTS_HD inline int64_t gdn_forward_scratch(const GdnDims& n) {
  return n.Dk * n.Dv + 2 * n.Dk + 2 * n.Dv;
}
template <typename T>
RCTS_HD inline void gated_delta_rule_forward_head(T* o, T* scratch, const T* q, const T* k, const T* v, const T* a,
                                                  const T* braw, const T* A_log, const T* dt_bias, int64_t b,
                                                  int64_t hv, const GdnDims& n) {
  T* Sm = scratch;
  T* qn = Sm + n.Dk * n.Dv;
  T* kn = qn + n.Dk;
  T* delta = kn + n.Dk;
  T* u = delta + n.Dv;
  for (int64_t e = 0; e < n.Dk * n.Dv; ++e) Sm[e] = 0;
  const T scale = gdn_scale<T>(n.Dk);
  for (int64_t t = 0; t < n.S; ++t) {
    const GdnStep<T> st = gdn_step(qn, kn, q, k, a, braw, A_log, dt_bias, b, hv, t, n);
    const int64_t row = (b * n.Hv + hv) * n.S + t;
    gdn_advance(Sm, o + row * n.Dv, delta, u, qn, kn, v + row * n.Dv, st, scale, n.Dk, n.Dv);
  }
}

// Backward of value head (b, hv). Writes, in value-head space: dqv, dkv (B, Hv, S, Dk),
// dv (B, Hv, S, Dv), da and db (B, Hv, S) and dlogA (B, Hv, S), the term of dA_log of
// each token (dg * g). The states S_0..S_S are recomputed into scratch first
// (gdn_backward_scratch), then the reverse pass runs t = S-1 .. 0 with dS (the
// gradient of S_t) starting at 0:
//   dS += q~ do^T;  dq~ = S_t do;  dkn = dS d;  dd = dS^T kn;  dbeta = dd . (v - u)
//   dv = beta dd;  du = -dv;  dS^ = dS + kn du^T;  dkn += S^ du;  dg = sum_ij dS^ S^
//   dS = decay * dS^   (S^ = decay * S_{t-1}, recomputed)
// then the l2norm, sigmoid and softplus chains (dx = dg * (-A) * softplus'(x)).
template <typename T> RCTS_HD inline int64_t gdn_backward_scratch(const GdnDims& n) {
  return (n.S + 2) * n.Dk * n.Dv + 4 * n.Dk + 3 * n.Dv;
}
template <typename T>
RCTS_HD inline void gated_delta_rule_backward_head(T* dqv, T* dkv, T* dv, T* da, T* db, T* dlogA, T* scratch,
                                                   const T* dout, const T* q, const T* k, const T* v, const T* a,
                                                   const T* braw, const T* A_log, const T* dt_bias, int64_t b,
                                                   int64_t hv, const GdnDims& n) {
  const int64_t DD = n.Dk * n.Dv;
  T* states = scratch;               // S_0 .. S_S
  T* dS = states + (n.S + 1) * DD;   // DD
  T* qn = dS + DD;
  T* kn = qn + n.Dk;
  T* dq = kn + n.Dk;
  T* dk = dq + n.Dk;
  T* delta = dk + n.Dk;
  T* u = delta + n.Dv;
  T* dd = u + n.Dv;
  const T scale = gdn_scale<T>(n.Dk);
  for (int64_t e = 0; e < DD; ++e) states[e] = 0;
  for (int64_t t = 0; t < n.S; ++t) {
    const GdnStep<T> st = gdn_step(qn, kn, q, k, a, braw, A_log, dt_bias, b, hv, t, n);
    T* Sm = states + (t + 1) * DD;
    for (int64_t e = 0; e < DD; ++e) Sm[e] = states[t * DD + e];
    const int64_t row = (b * n.Hv + hv) * n.S + t;
    gdn_advance(Sm, static_cast<T*>(nullptr), delta, u, qn, kn, v + row * n.Dv, st, scale, n.Dk, n.Dv);
  }
  for (int64_t e = 0; e < DD; ++e) dS[e] = 0;
  for (int64_t t = n.S - 1; t >= 0; --t) {
    const GdnStep<T> st = gdn_step(qn, kn, q, k, a, braw, A_log, dt_bias, b, hv, t, n);
    const int64_t row = (b * n.Hv + hv) * n.S + t;
    const T* St = states + (t + 1) * DD;
    const T* Sp = states + t * DD;
    const T* vt = v + row * n.Dv;
    const T* dot = dout + row * n.Dv;
    // d and u as the forward computed them (S^ = decay * S_{t-1}, same roundings).
    for (int64_t j = 0; j < n.Dv; ++j) {
      T uj = 0;
      for (int64_t i = 0; i < n.Dk; ++i) uj += (st.decay * Sp[i * n.Dv + j]) * kn[i];
      u[j] = uj;
      delta[j] = st.beta * (vt[j] - uj);
    }
    for (int64_t i = 0; i < n.Dk; ++i)
      for (int64_t j = 0; j < n.Dv; ++j) dS[i * n.Dv + j] = dS[i * n.Dv + j] + (qn[i] * scale) * dot[j];
    for (int64_t i = 0; i < n.Dk; ++i) {
      T acc = 0;
      for (int64_t j = 0; j < n.Dv; ++j) acc += St[i * n.Dv + j] * dot[j];
      dq[i] = acc * scale;  // d qn
      T acck = 0;
      for (int64_t j = 0; j < n.Dv; ++j) acck += dS[i * n.Dv + j] * delta[j];
      dk[i] = acck;  // d kn, first part
    }
    T dbeta = 0;
    for (int64_t j = 0; j < n.Dv; ++j) {
      T acc = 0;
      for (int64_t i = 0; i < n.Dk; ++i) acc += dS[i * n.Dv + j] * kn[i];
      dd[j] = acc;
      dbeta += acc * (vt[j] - u[j]);
      dv[row * n.Dv + j] = st.beta * acc;
    }
    // dS^ = dS - kn (beta dd)^T, in place; then dkn += S^ du and dg.
    for (int64_t i = 0; i < n.Dk; ++i)
      for (int64_t j = 0; j < n.Dv; ++j) dS[i * n.Dv + j] = dS[i * n.Dv + j] + kn[i] * (-(st.beta * dd[j]));
    T dg = 0;
    for (int64_t i = 0; i < n.Dk; ++i) {
      T acc = 0;
      for (int64_t j = 0; j < n.Dv; ++j) {
        const T shat = st.decay * Sp[i * n.Dv + j];
        acc += shat * (-(st.beta * dd[j]));
        dg += dS[i * n.Dv + j] * shat;
      }
      dk[i] = dk[i] + acc;
    }
    for (int64_t e = 0; e < DD; ++e) dS[e] = st.decay * dS[e];
    // l2norm backward: dx = r * (dy - y (y . dy)).
    T dotq = 0, dotk = 0;
    for (int64_t i = 0; i < n.Dk; ++i) dotq += qn[i] * dq[i];
    for (int64_t i = 0; i < n.Dk; ++i) dotk += kn[i] * dk[i];
    for (int64_t i = 0; i < n.Dk; ++i) {
      dqv[row * n.Dk + i] = st.rq * (dq[i] - qn[i] * dotq);
      dkv[row * n.Dk + i] = st.rk * (dk[i] - kn[i] * dotk);
    }
    db[row] = dbeta * (st.beta * (static_cast<T>(1) - st.beta));
    da[row] = (dg * (-st.A)) * gdn_dsoftplus(st.x);
    dlogA[row] = dg * st.g;
  }
}

// dq (or dk) element (b, hk, t, i): the value heads of key head hk summed in order,
// starting from the first one's term.
template <typename T>
RCTS_HD inline T gdn_group_sum(const T* dv_space, int64_t b, int64_t hk, int64_t t, int64_t i, const GdnDims& n) {
  const int64_t r = n.Hv / n.Hk;
  T acc = dv_space[((b * n.Hv + hk * r) * n.S + t) * n.Dk + i];
  for (int64_t m = 1; m < r; ++m) acc += dv_space[((b * n.Hv + hk * r + m) * n.S + t) * n.Dk + i];
  return acc;
}

// dA_log[h] += sum over b (outer), t (inner) of dlogA; ddt_bias[h] += the same sum of da.
template <typename T>
RCTS_HD inline void gdn_gate_param_grad(T* dA_log, T* ddt_bias, const T* dlogA, const T* da, int64_t h,
                                        const GdnDims& n) {
  T acc_a = 0, acc_d = 0;
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t t = 0; t < n.S; ++t) {
      acc_a += dlogA[(b * n.Hv + h) * n.S + t];
      acc_d += da[(b * n.Hv + h) * n.S + t];
    }
  dA_log[h] += acc_a;
  ddt_bias[h] += acc_d;
}

// ---------------------------------------------------------------- gated RMSNorm
template <typename T> RCTS_HD inline T gated_rms_rstd(const T* x, int64_t D, T eps) {
  T ss = 0;
  for (int64_t c = 0; c < D; ++c) ss += x[c] * x[c];
  return static_cast<T>(1) / exact::sqrt(ss / static_cast<T>(D) + eps);
}

template <typename T>
RCTS_HD inline void gated_rmsnorm_forward_row(T* y, const T* x, const T* z, const T* w, int64_t D, T eps) {
  const T r = gated_rms_rstd(x, D, eps);
  for (int64_t c = 0; c < D; ++c) y[c] = ((x[c] * r) * w[c]) * gdn_silu(z[c]);
}

// dx and dz of one row: dn = (dy * silu(z)) * w; dx = (dn - n * (sum dn*n / D)) * r;
// dz = (dy * (n * w)) * silu'(z).
template <typename T>
RCTS_HD inline void gated_rmsnorm_input_grad_row(T* dx, T* dz, const T* dy, const T* x, const T* z, const T* w,
                                                 int64_t D, T eps) {
  const T r = gated_rms_rstd(x, D, eps);
  T acc = 0;
  for (int64_t c = 0; c < D; ++c) acc += ((dy[c] * gdn_silu(z[c])) * w[c]) * (x[c] * r);
  const T m = acc / static_cast<T>(D);
  for (int64_t c = 0; c < D; ++c) {
    const T n = x[c] * r;
    const T dn = (dy[c] * gdn_silu(z[c])) * w[c];
    dx[c] = (dn - n * m) * r;
    dz[c] = (dy[c] * (n * w[c])) * gdn_dsilu(z[c]);
  }
}

// dw[c] += sum over rows (increasing) of (dy * silu(z)) * n.
template <typename T>
RCTS_HD inline void gated_rmsnorm_weight_grad_column(T* dw, int64_t c, const T* dy, const T* x, const T* z, int64_t N,
                                                     int64_t D, T eps) {
  T acc = 0;
  for (int64_t r = 0; r < N; ++r) {
    const T rs = gated_rms_rstd(x + r * D, D, eps);
    acc += (dy[r * D + c] * gdn_silu(z[r * D + c])) * (x[r * D + c] * rs);
  }
  dw[c] += acc;
}

}  // namespace rcts::exact
