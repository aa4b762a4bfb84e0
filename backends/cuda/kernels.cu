// The CUDA exact tier (design §11): thin __global__ launchers over the exact-tier bodies
// of kernels/exact. Every thread computes whole outputs (an element, a row, a column)
// with the body's documented order, in a grid-stride loop, so the bits depend neither on
// blockDim nor on gridDim and equal the CPU's. Built with --fmad=false -prec-div=true
// -prec-sqrt=true -ftz=false; FMA appears only in the GEMM body, which asks for it
// (tests/cuda scans this file's PTX for anything else).
#include <cuda_runtime.h>

#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "backends/cuda/launch.hpp"
#include "backends/cuda/launch_kernel.cuh"
#include "kernels/exact/gdn.hpp"
#include "kernels/exact/gemm.hpp"
#include "kernels/exact/layout.hpp"
#include "kernels/exact/moe.hpp"
#include "kernels/exact/norm.hpp"
#include "kernels/exact/pointwise.hpp"

namespace rcts::cuda {

namespace {

int g_threads = 256;

__device__ int64_t first_index() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// --- GEMM: one element of one product per iteration ---------------------------------
template <typename T>
__global__ void gemm_kernel(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                            int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc,
                            int64_t stride_c, int64_t batch, bool accumulate) {
  for (int64_t x = first_index(); x < batch * M * N; x += stride()) {
    const int64_t bi = x / (M * N), i = (x / N) % M, j = x % N;
    T* c = C + bi * stride_c + i * ldc + j;
    *c = exact::gemm_element(ta, tb, i, j, K, A + bi * stride_a, lda, B + bi * stride_b, ldb, *c, accumulate);
  }
}

// --- normalisation and attention ------------------------------------------------------
template <typename T>
__global__ void layernorm_forward_kernel(T* out, const T* inp, const T* w, const T* b, int64_t N, int64_t C, T eps) {
  for (int64_t r = first_index(); r < N; r += stride()) exact::layernorm_forward_row(out + r * C, inp + r * C, w, b, C, eps);
}
template <typename T>
__global__ void layernorm_input_grad_kernel(T* dinp, const T* dout, const T* inp, const T* w, int64_t N, int64_t C,
                                            T eps, T* means, T* rstds) {
  for (int64_t r = first_index(); r < N; r += stride())
    exact::layernorm_input_grad_row(dinp + r * C, dout + r * C, inp + r * C, w, C, eps, means[r], rstds[r]);
}
template <typename T>
__global__ void layernorm_param_grad_kernel(T* dw, T* db, const T* dout, const T* inp, const T* means, const T* rstds,
                                            int64_t N, int64_t C) {
  for (int64_t c = first_index(); c < C; c += stride())
    exact::layernorm_param_grad_column(dw, db, c, dout, inp, means, rstds, N, C);
}
template <typename T>
__global__ void softmax_forward_kernel(T* out, const T* inp, int64_t rows, int64_t S) {
  for (int64_t r = first_index(); r < rows; r += stride()) exact::softmax_causal_row(out + r * S, inp + r * S, r % S, S);
}
template <typename T>
__global__ void softmax_backward_kernel(T* dinp, const T* dout, const T* out, int64_t rows, int64_t S) {
  for (int64_t r = first_index(); r < rows; r += stride())
    exact::softmax_causal_backward_row(dinp + r * S, dout + r * S, out + r * S, r % S, S);
}

// --- element-wise ---------------------------------------------------------------------
template <typename T>
__global__ void dropout_apply_kernel(T* out, const T* inp, const uint8_t* mask, int64_t n, double p, T scale) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = exact::dropout_apply(inp[i], mask[i], p, scale);
}
template <typename T>
__global__ void gelu_forward_kernel(T* out, const T* inp, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = exact::gelu_forward(inp[i]);
}
template <typename T>
__global__ void gelu_backward_kernel(T* dinp, const T* dout, const T* inp, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) dinp[i] = exact::gelu_backward(dout[i], inp[i]);
}
template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* inp, int64_t N, int64_t F) {
  for (int64_t x = first_index(); x < N * F; x += stride()) {
    const int64_t r = x / F, f = x % F;
    out[x] = exact::swiglu_forward(inp[r * 2 * F + f], inp[r * 2 * F + F + f]);
  }
}
template <typename T>
__global__ void swiglu_backward_kernel(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) {
  for (int64_t x = first_index(); x < N * F; x += stride()) {
    const int64_t r = x / F, f = x % F;
    T da, db;  // both inputs read before either is written: dinp may alias inp
    exact::swiglu_backward(dout[x], inp[r * 2 * F + f], inp[r * 2 * F + F + f], da, db);
    dinp[r * 2 * F + f] = da;
    dinp[r * 2 * F + F + f] = db;
  }
}
template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = a[i] + b[i];
}
template <typename T>
__global__ void bias_add_kernel(T* out, const T* inp, const T* bias, int64_t N, int64_t C) {
  for (int64_t x = first_index(); x < N * C; x += stride()) out[x] = inp[x] + bias[x % C];
}
template <typename T>
__global__ void bias_backward_kernel(T* dbias, const T* dout, int64_t N, int64_t C) {
  for (int64_t c = first_index(); c < C; c += stride()) exact::bias_grad_column(dbias, dout, c, N, C);
}
template <typename T>
__global__ void scale_kernel(T* out, const T* inp, T factor, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = inp[i] * factor;
}
template <typename T>
__global__ void sum_blocks_kernel(T* out, const T* blocks, int64_t n, const int* order, int nblocks) {
  for (int64_t i = first_index(); i < n; i += stride()) out[i] = exact::sum_blocks(blocks, n, order, nblocks, i);
}
template <typename T>
__global__ void mse_loss_kernel(T* result, const T* y, const T* target, int64_t n) {
  if (first_index() == 0) *result = exact::mse_loss(y, target, n);  // one sum in index order
}
template <typename T>
__global__ void mse_loss_backward_kernel(T* dy, const T* y, const T* target, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) dy[i] = exact::mse_loss_grad(y[i], target[i], n);
}
template <typename T>
__global__ void sgd_kernel(T* w, const T* g, int64_t n, T lr) {
  for (int64_t i = first_index(); i < n; i += stride()) w[i] = exact::sgd_update(w[i], g[i], lr);
}

// --- MoE ------------------------------------------------------------------------------
template <typename T>
__global__ void row_softmax_forward_kernel(T* out, const T* in, int64_t rows, int64_t cols) {
  for (int64_t r = first_index(); r < rows; r += stride()) exact::row_softmax_row(out + r * cols, in + r * cols, cols);
}
template <typename T>
__global__ void row_softmax_backward_kernel(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for (int64_t r = first_index(); r < rows; r += stride())
    exact::row_softmax_backward_row(din + r * cols, dout + r * cols, out + r * cols, cols);
}
template <typename T>
__global__ void topk_kernel(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) {
  for (int64_t t = first_index(); t < tokens; t += stride())
    exact::topk_row(topk + t * k, weights + t * k, probs + t * experts, experts, k);
}
template <typename T>
__global__ void aux_loss_kernel(T* result, const T* probs, const int32_t* topk, int64_t tokens, int64_t experts,
                                int64_t k, double coeff) {
  if (first_index() == 0) *result = exact::aux_loss(probs, topk, tokens, experts, k, coeff);
}
template <typename T>
__global__ void topk_scatter_kernel(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                                    int64_t k) {
  for (int64_t t = first_index(); t < tokens; t += stride())
    exact::topk_scatter_row(dprobs + t * experts, topk + t * k, dweights + t * k, experts, k);
}
template <typename T>
__global__ void moe_combine_kernel(T* out, const T* weights, const T* expert_out, const int64_t* position,
                                   const T* shared, int64_t tokens, int64_t K, int64_t h) {
  for (int64_t x = first_index(); x < tokens * h; x += stride())
    out[x] = exact::moe_combine_element(weights, expert_out, position, shared, x / h, x % h, K, h);
}
template <typename T>
__global__ void moe_combine_backward_kernel(T* dexpert, T* dweights, const T* dout, const T* weights,
                                            const T* expert_out, const int64_t* position, int64_t tokens, int64_t K,
                                            int64_t h) {
  for (int64_t a = first_index(); a < tokens * K; a += stride())
    exact::moe_combine_backward_assignment(dexpert, dweights, dout, weights, expert_out, position, a, K, h);
}
template <typename T>
__global__ void moe_input_grad_kernel(T* dx, const T* dsent, const int64_t* position, const T* drouter,
                                      const T* dshared, int64_t tokens, int64_t K, int64_t h) {
  for (int64_t x = first_index(); x < tokens * h; x += stride())
    dx[x] = exact::moe_input_grad_element(dsent, position, drouter, dshared, x / h, x % h, K, h);
}

// --- gated delta net: one element / head / column per iteration ----------------------
template <typename T>
__global__ void conv_silu_forward_kernel(T* out, const T* inp, const T* w, int64_t B, int64_t H, int64_t S, int64_t D,
                                         int64_t K) {
  for (int64_t x = first_index(); x < B * H * S * D; x += stride())
    out[x] = exact::conv_silu_forward_element(inp, w, x / (S * D), (x / D) % S, x % D, H, S, D, K);
}
template <typename T>
__global__ void conv_silu_input_grad_kernel(T* dinp, const T* dout, const T* inp, const T* w, int64_t B, int64_t H,
                                            int64_t S, int64_t D, int64_t K) {
  for (int64_t x = first_index(); x < B * H * S * D; x += stride())
    dinp[x] = exact::conv_silu_input_grad_element(dout, inp, w, x / (S * D), (x / D) % S, x % D, H, S, D, K);
}
template <typename T>
__global__ void conv_silu_weight_grad_kernel(T* dw, const T* dout, const T* inp, const T* w, int64_t B, int64_t H,
                                             int64_t S, int64_t D, int64_t K) {
  for (int64_t x = first_index(); x < H * D * K; x += stride())
    exact::conv_silu_weight_grad_element(dw, dout, inp, w, x / K, x % K, B, H, S, D, K);
}
template <typename T>
__global__ void gdn_forward_kernel(T* out, T* scratch, const T* q, const T* k, const T* v, const T* a, const T* b,
                                   const T* A_log, const T* dt_bias, exact::GdnDims n) {
  const int64_t per = exact::gdn_forward_scratch<T>(n);
  for (int64_t x = first_index(); x < n.B * n.Hv; x += stride())
    exact::gated_delta_rule_forward_head(out, scratch + x * per, q, k, v, a, b, A_log, dt_bias, x / n.Hv, x % n.Hv, n);
}
template <typename T>
__global__ void gdn_backward_kernel(T* dqv, T* dkv, T* dv, T* da, T* db, T* dlogA, T* scratch, const T* dout,
                                    const T* q, const T* k, const T* v, const T* a, const T* b, const T* A_log,
                                    const T* dt_bias, exact::GdnDims n) {
  const int64_t per = exact::gdn_backward_scratch<T>(n);
  for (int64_t x = first_index(); x < n.B * n.Hv; x += stride())
    exact::gated_delta_rule_backward_head(dqv, dkv, dv, da, db, dlogA, scratch + x * per, dout, q, k, v, a, b, A_log,
                                          dt_bias, x / n.Hv, x % n.Hv, n);
}
template <typename T>
__global__ void gdn_group_sum_kernel(T* dq, T* dk, const T* dqv, const T* dkv, exact::GdnDims n) {
  for (int64_t e = first_index(); e < n.B * n.Hk * n.S * n.Dk; e += stride()) {
    const int64_t i = e % n.Dk, t = (e / n.Dk) % n.S, hk = (e / (n.Dk * n.S)) % n.Hk, bb = e / (n.Dk * n.S * n.Hk);
    dq[e] = exact::gdn_group_sum(dqv, bb, hk, t, i, n);
    dk[e] = exact::gdn_group_sum(dkv, bb, hk, t, i, n);
  }
}
template <typename T>
__global__ void gdn_gate_param_grad_kernel(T* dA_log, T* ddt_bias, const T* dlogA, const T* da, exact::GdnDims n) {
  for (int64_t h = first_index(); h < n.Hv; h += stride()) exact::gdn_gate_param_grad(dA_log, ddt_bias, dlogA, da, h, n);
}
template <typename T>
__global__ void gated_rmsnorm_forward_kernel(T* out, const T* x, const T* z, const T* w, int64_t N, int64_t D, T eps) {
  for (int64_t r = first_index(); r < N; r += stride())
    exact::gated_rmsnorm_forward_row(out + r * D, x + r * D, z + r * D, w, D, eps);
}
template <typename T>
__global__ void gated_rmsnorm_input_grad_kernel(T* dx, T* dz, const T* dout, const T* x, const T* z, const T* w,
                                                int64_t N, int64_t D, T eps) {
  for (int64_t r = first_index(); r < N; r += stride())
    exact::gated_rmsnorm_input_grad_row(dx + r * D, dz + r * D, dout + r * D, x + r * D, z + r * D, w, D, eps);
}
template <typename T>
__global__ void gated_rmsnorm_weight_grad_kernel(T* dw, const T* dout, const T* x, const T* z, int64_t N, int64_t D,
                                                 T eps) {
  for (int64_t c = first_index(); c < D; c += stride()) exact::gated_rmsnorm_weight_grad_column(dw, c, dout, x, z, N, D, eps);
}

// --- data movement --------------------------------------------------------------------
template <typename D, typename S>
__global__ void convert_kernel(D* dst, const S* src, int64_t n) {
  for (int64_t i = first_index(); i < n; i += stride()) dst[i] = exact::convert<D, S>(src[i]);
}
template <typename E>
__global__ void permute_kernel(E* heads, E* tok, int64_t width, int64_t col0, int64_t S, int64_t B, int64_t A, int64_t D,
                               bool to_heads) {
  for (int64_t h = first_index(); h < B * A * S * D; h += stride()) {
    const int64_t t = exact::token_index_of_head_element(h, width, col0, S, B, A, D);
    if (to_heads) heads[h] = tok[t];
    else tok[t] = heads[h];
  }
}
__global__ void gather_rows_kernel(unsigned char* dst, const unsigned char* src, int64_t row_bytes,
                                   const int64_t* index, int64_t n) {
  for (int64_t x = first_index(); x < n * row_bytes; x += stride()) {
    const int64_t r = x / row_bytes, b = x % row_bytes;
    dst[x] = src[index[r] * row_bytes + b];
  }
}
__global__ void spin_kernel(int64_t nanoseconds) {
  const long long start = clock64();
  // clock64 counts SM cycles; ~1.5 GHz is close enough for a test delay.
  while (clock64() - start < nanoseconds * 3 / 2) {
  }
}
__global__ void dropout_mask_kernel(uint8_t* mask, int64_t n, uint64_t seed, uint64_t offset, uint32_t threshold) {
  for (int64_t i = first_index(); i < n; i += stride()) mask[i] = exact::dropout_mask(seed, offset, i, threshold);
}

template <typename F> void by_elem(Elem t, F&& f) {
  switch (t) {
    case Elem::f64: f(double{}); break;
    case Elem::f32: f(float{}); break;
    case Elem::bf16: f(bf16{}); break;
    case Elem::u8: f(uint8_t{}); break;
    case Elem::i32: f(int32_t{}); break;
    case Elem::i64: f(int64_t{}); break;
  }
}

template <typename E>
void permute(Stream s, void* heads, void* tok, int64_t width, int64_t col0, int64_t S, int64_t B, int64_t A, int64_t D,
             bool to_heads) {
  launch("permute_kernel", permute_kernel<E>, B * A * S * D, s, static_cast<E*>(heads), static_cast<E*>(tok), width,
                                                                     col0, S, B, A, D, to_heads);
}
void permute_bytes(Stream s, void* heads, void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t S, int64_t B,
                   int64_t A, int64_t D, bool to_heads) {
  switch (elem_bytes) {
    case 2: permute<uint16_t>(s, heads, tok, width, col0, S, B, A, D, to_heads); break;
    case 4: permute<uint32_t>(s, heads, tok, width, col0, S, B, A, D, to_heads); break;
    default: permute<uint64_t>(s, heads, tok, width, col0, S, B, A, D, to_heads); break;
  }
}

}  // namespace

template <typename T>
void gemm(Stream s, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
          const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
          bool accumulate) {
  if (batch * M * N == 0) return;
  launch("gemm_kernel", gemm_kernel<T>, batch * M * N, s, ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b,
                                                                   C, ldc, stride_c, batch, accumulate);
}
template <typename T>
void layernorm_forward(Stream s, T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                       double eps) {
  launch("layernorm_forward_kernel", layernorm_forward_kernel<T>, N, s, out, inp, weight, bias, N, C, static_cast<T>(eps));
}
template <typename T>
void layernorm_backward(Stream s, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                        int64_t C, double eps, T* means, T* rstds) {
  launch("layernorm_input_grad_kernel", layernorm_input_grad_kernel<T>, N, s, dinp, dout, inp, weight, N, C,
                                                                      static_cast<T>(eps), means, rstds);
  launch("layernorm_param_grad_kernel", layernorm_param_grad_kernel<T>, C, s, dweight, dbias, dout, inp, means, rstds, N, C);
}
template <typename T> void softmax_causal_forward(Stream s, T* out, const T* inp, int64_t BH, int64_t S) {
  launch("softmax_forward_kernel", softmax_forward_kernel<T>, BH * S, s, out, inp, BH * S, S);
}
template <typename T>
void softmax_causal_backward(Stream s, T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) {
  launch("softmax_backward_kernel", softmax_backward_kernel<T>, BH * S, s, dinp, dout, out, BH * S, S);
}
template <typename T> void dropout_apply(Stream s, T* out, const T* inp, const uint8_t* mask, int64_t n, double p) {
  launch("dropout_apply_kernel", dropout_apply_kernel<T>, n, s, out, inp, mask, n, p, exact::dropout_scale<T>(p));
}
template <typename T> void gelu_forward(Stream s, T* out, const T* inp, int64_t n) {
  launch("gelu_forward_kernel", gelu_forward_kernel<T>, n, s, out, inp, n);
}
template <typename T> void gelu_backward(Stream s, T* dinp, const T* dout, const T* inp, int64_t n) {
  launch("gelu_backward_kernel", gelu_backward_kernel<T>, n, s, dinp, dout, inp, n);
}
template <typename T> void swiglu_forward(Stream s, T* out, const T* inp, int64_t N, int64_t F) {
  launch("swiglu_forward_kernel", swiglu_forward_kernel<T>, N * F, s, out, inp, N, F);
}
template <typename T> void swiglu_backward(Stream s, T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) {
  launch("swiglu_backward_kernel", swiglu_backward_kernel<T>, N * F, s, dinp, dout, inp, N, F);
}
template <typename T> void add(Stream s, T* out, const T* a, const T* b, int64_t n) {
  launch("add_kernel", add_kernel<T>, n, s, out, a, b, n);
}
template <typename T> void bias_add(Stream s, T* out, const T* inp, const T* bias, int64_t N, int64_t C) {
  launch("bias_add_kernel", bias_add_kernel<T>, N * C, s, out, inp, bias, N, C);
}
template <typename T> void bias_backward(Stream s, T* dbias, const T* dout, int64_t N, int64_t C) {
  launch("bias_backward_kernel", bias_backward_kernel<T>, C, s, dbias, dout, N, C);
}
template <typename T> void scale(Stream s, T* out, const T* inp, T factor, int64_t n) {
  launch("scale_kernel", scale_kernel<T>, n, s, out, inp, factor, n);
}
template <typename T> void sum_blocks(Stream s, T* out, const T* blocks, int64_t n, const int* order, int nblocks) {
  launch("sum_blocks_kernel", sum_blocks_kernel<T>, n, s, out, blocks, n, order, nblocks);
}
template <typename T> void mse_loss(Stream s, T* result, const T* y, const T* target, int64_t n) {
  launch_shaped("mse_loss_kernel", mse_loss_kernel<T>, 1, 1, s, result, y, target, n);
}
template <typename T> void mse_loss_backward(Stream s, T* dy, const T* y, const T* target, int64_t n) {
  launch("mse_loss_backward_kernel", mse_loss_backward_kernel<T>, n, s, dy, y, target, n);
}
template <typename T> void sgd_step(Stream s, T* w, const T* g, int64_t n, T lr) {
  launch("sgd_kernel", sgd_kernel<T>, n, s, w, g, n, lr);
}
template <typename T> void row_softmax_forward(Stream s, T* out, const T* in, int64_t rows, int64_t cols) {
  launch("row_softmax_forward_kernel", row_softmax_forward_kernel<T>, rows, s, out, in, rows, cols);
}
template <typename T> void row_softmax_backward(Stream s, T* din, const T* dout, const T* out, int64_t rows, int64_t cols) {
  launch("row_softmax_backward_kernel", row_softmax_backward_kernel<T>, rows, s, din, dout, out, rows, cols);
}
template <typename T>
void topk_select(Stream s, int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) {
  launch("topk_kernel", topk_kernel<T>, tokens, s, topk, weights, probs, tokens, experts, k);
}
template <typename T>
void aux_loss(Stream s, T* result, const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
              double coeff) {
  launch_shaped("aux_loss_kernel", aux_loss_kernel<T>, 1, 1, s, result, probs, topk, tokens, experts, k, coeff);
}
template <typename T>
void topk_scatter(Stream s, T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                  int64_t k) {
  launch("topk_scatter_kernel", topk_scatter_kernel<T>, tokens, s, dprobs, topk, dweights, tokens, experts, k);
}
template <typename T>
void moe_combine(Stream s, T* out, const T* weights, const T* expert_out, const int64_t* position, const T* shared,
                 int64_t tokens, int64_t K, int64_t h) {
  launch("moe_combine_kernel", moe_combine_kernel<T>, tokens * h, s, out, weights, expert_out, position, shared, tokens,
                                                                      K, h);
}
template <typename T>
void moe_combine_backward(Stream s, T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                          const int64_t* position, int64_t tokens, int64_t K, int64_t h) {
  launch("moe_combine_backward_kernel", moe_combine_backward_kernel<T>, tokens * K, s, dexpert, dweights, dout, weights,
                                                                               expert_out, position, tokens, K, h);
}
template <typename T>
void moe_input_grad(Stream s, T* dx, const T* dsent, const int64_t* position, const T* drouter, const T* dshared,
                    int64_t tokens, int64_t K, int64_t h) {
  launch("moe_input_grad_kernel", moe_input_grad_kernel<T>, tokens * h, s, dx, dsent, position, drouter, dshared, tokens,
                                                                         K, h);
}

template <typename T>
void causal_conv_silu_forward(Stream s, T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S,
                              int64_t D, int64_t K) {
  launch("conv_silu_forward_kernel", conv_silu_forward_kernel<T>, B * H * S * D, s, out, inp, weight, B, H, S, D, K);
}
template <typename T>
void causal_conv_silu_backward(Stream s, T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B,
                               int64_t H, int64_t S, int64_t D, int64_t K) {
  launch("conv_silu_input_grad_kernel", conv_silu_input_grad_kernel<T>, B * H * S * D, s, dinp, dout, inp, weight, B, H, S, D,
                                                                                   K);
  launch("conv_silu_weight_grad_kernel", conv_silu_weight_grad_kernel<T>, H * D * K, s, dweight, dout, inp, weight, B, H, S, D,
                                                                               K);
}
template <typename T>
void gated_delta_rule_forward(Stream s, T* out, T* scratch, const T* q, const T* k, const T* v, const T* a, const T* b,
                              const T* A_log, const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S,
                              int64_t Dk, int64_t Dv) {
  const exact::GdnDims n{B, Hk, Hv, S, Dk, Dv};
  launch("gdn_forward_kernel", gdn_forward_kernel<T>, B * Hv, s, out, scratch, q, k, v, a, b, A_log, dt_bias, n);
}
template <typename T>
void gated_delta_rule_backward(Stream s, T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, T* scratch,
                               const T* dout, const T* q, const T* k, const T* v, const T* a, const T* b,
                               const T* A_log, const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S,
                               int64_t Dk, int64_t Dv) {
  const exact::GdnDims n{B, Hk, Hv, S, Dk, Dv};
  T* dqv = scratch + B * Hv * exact::gdn_backward_scratch<T>(n);
  T* dkv = dqv + B * Hv * S * Dk;
  T* dlogA = dkv + B * Hv * S * Dk;
  launch("gdn_backward_kernel", gdn_backward_kernel<T>, B * Hv, s, dqv, dkv, dv, da, db, dlogA, scratch, dout, q, k, v,
                                                                    a, b, A_log, dt_bias, n);
  launch("gdn_group_sum_kernel", gdn_group_sum_kernel<T>, B * Hk * S * Dk, s, dq, dk, dqv, dkv, n);
  launch("gdn_gate_param_grad_kernel", gdn_gate_param_grad_kernel<T>, Hv, s, dA_log, ddt_bias, dlogA, da, n);
}
template <typename T>
void gated_rmsnorm_forward(Stream s, T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D, double eps) {
  launch("gated_rmsnorm_forward_kernel", gated_rmsnorm_forward_kernel<T>, N, s, out, x, z, weight, N, D, static_cast<T>(eps));
}
template <typename T>
void gated_rmsnorm_backward(Stream s, T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z, const T* weight,
                            int64_t N, int64_t D, double eps) {
  launch("gated_rmsnorm_input_grad_kernel", gated_rmsnorm_input_grad_kernel<T>, N, s, dx, dz, dout, x, z, weight, N, D,
                                                                          static_cast<T>(eps));
  launch("gated_rmsnorm_weight_grad_kernel", gated_rmsnorm_weight_grad_kernel<T>, D, s, dweight, dout, x, z, N, D,
                                                                           static_cast<T>(eps));
}

void convert(Stream s, void* dst, Elem dst_type, const void* src, Elem src_type, int64_t n) {
  by_elem(dst_type, [&](auto d) {
    by_elem(src_type, [&](auto x) {
      using D = decltype(d);
      using S = decltype(x);
      launch("convert_kernel", convert_kernel<D, S>, n, s, static_cast<D*>(dst), static_cast<const S*>(src), n);
    });
  });
}
void tokens_to_heads(Stream s, void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t S,
                     int64_t B, int64_t A, int64_t D) {
  permute_bytes(s, heads, const_cast<void*>(tok), elem_bytes, width, col0, S, B, A, D, true);
}
void heads_to_tokens(Stream s, void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t S,
                     int64_t B, int64_t A, int64_t D) {
  permute_bytes(s, const_cast<void*>(heads), tok, elem_bytes, width, col0, S, B, A, D, false);
}
void gather_rows(Stream s, void* dst, const void* src, int64_t row_bytes, const int64_t* index, int64_t n) {
  if (n * row_bytes == 0) return;
  launch("gather_rows_kernel", gather_rows_kernel, n * row_bytes, s, static_cast<unsigned char*>(dst),
                                                                      static_cast<const unsigned char*>(src), row_bytes,
                                                                      index, n);
}
void dropout_mask(Stream s, uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) {
  launch("dropout_mask_kernel", dropout_mask_kernel, n, s, mask, n, seed, offset, dropout_rule::threshold(p));
}
void spin(Stream s, int64_t nanoseconds) { launch_shaped("spin_kernel", spin_kernel, 1, 1, s, nanoseconds); }
void fill(Stream s, void* p, uint8_t value, int64_t bytes) {
  record_launch("cudaMemsetAsync", cudaMemsetAsync(p, value, static_cast<size_t>(bytes), st(s)));
}
bool set_threads_per_block(int threads) {
  if (threads < 32 || threads > 1024 || threads % 32 != 0) return false;
  g_threads = threads;
  return true;
}
int threads_per_block() { return g_threads; }

namespace {
thread_local LaunchErrors t_errors;
std::mutex g_limits_mutex;
std::unordered_map<const void*, int> g_limits;  // kernel -> maxThreadsPerBlock on this process's device
}  // namespace

void record_launch(const char* kernel, cudaError_t e) {
  if (e != cudaSuccess) t_errors.record(kernel, cudaGetErrorString(e));
}

int kernel_max_threads(const char* kernel, const void* fn) {
  {
    const std::lock_guard<std::mutex> lock(g_limits_mutex);
    if (const auto it = g_limits.find(fn); it != g_limits.end()) return it->second;
  }
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, fn);
  if (e != cudaSuccess) {
    cudaGetLastError();  // reported here, not again at the next launch
    record_launch(kernel, e);
    return 0;
  }
  const std::lock_guard<std::mutex> lock(g_limits_mutex);
  g_limits[fn] = attr.maxThreadsPerBlock;
  return attr.maxThreadsPerBlock;
}

std::string take_launch_error() { return t_errors.take(); }

#define RCTS_CUDA_INSTANTIATE(T)                                                                                    \
  template void gemm<T>(Stream, Trans, Trans, int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const T*,      \
                        int64_t, int64_t, T*, int64_t, int64_t, int64_t, bool);                                     \
  template void layernorm_forward<T>(Stream, T*, const T*, const T*, const T*, int64_t, int64_t, double);           \
  template void layernorm_backward<T>(Stream, T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, double,   \
                                      T*, T*);                                                                      \
  template void softmax_causal_forward<T>(Stream, T*, const T*, int64_t, int64_t);                                  \
  template void softmax_causal_backward<T>(Stream, T*, const T*, const T*, int64_t, int64_t);                       \
  template void dropout_apply<T>(Stream, T*, const T*, const uint8_t*, int64_t, double);                            \
  template void gelu_forward<T>(Stream, T*, const T*, int64_t);                                                     \
  template void gelu_backward<T>(Stream, T*, const T*, const T*, int64_t);                                          \
  template void swiglu_forward<T>(Stream, T*, const T*, int64_t, int64_t);                                          \
  template void swiglu_backward<T>(Stream, T*, const T*, const T*, int64_t, int64_t);                               \
  template void add<T>(Stream, T*, const T*, const T*, int64_t);                                                    \
  template void bias_add<T>(Stream, T*, const T*, const T*, int64_t, int64_t);                                      \
  template void bias_backward<T>(Stream, T*, const T*, int64_t, int64_t);                                           \
  template void scale<T>(Stream, T*, const T*, T, int64_t);                                                         \
  template void sum_blocks<T>(Stream, T*, const T*, int64_t, const int*, int);                                      \
  template void mse_loss<T>(Stream, T*, const T*, const T*, int64_t);                                               \
  template void mse_loss_backward<T>(Stream, T*, const T*, const T*, int64_t);                                      \
  template void sgd_step<T>(Stream, T*, const T*, int64_t, T);                                                      \
  template void row_softmax_forward<T>(Stream, T*, const T*, int64_t, int64_t);                                     \
  template void row_softmax_backward<T>(Stream, T*, const T*, const T*, int64_t, int64_t);                          \
  template void topk_select<T>(Stream, int32_t*, T*, const T*, int64_t, int64_t, int64_t);                          \
  template void aux_loss<T>(Stream, T*, const T*, const int32_t*, int64_t, int64_t, int64_t, double);               \
  template void topk_scatter<T>(Stream, T*, const int32_t*, const T*, int64_t, int64_t, int64_t);                   \
  template void moe_combine<T>(Stream, T*, const T*, const T*, const int64_t*, const T*, int64_t, int64_t, int64_t); \
  template void moe_combine_backward<T>(Stream, T*, T*, const T*, const T*, const T*, const int64_t*, int64_t,      \
                                        int64_t, int64_t);                                                          \
  template void moe_input_grad<T>(Stream, T*, const T*, const int64_t*, const T*, const T*, int64_t, int64_t, int64_t); \
  template void causal_conv_silu_forward<T>(Stream, T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t,       \
                                            int64_t);                                                               \
  template void causal_conv_silu_backward<T>(Stream, T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, \
                                             int64_t, int64_t);                                                     \
  template void gated_delta_rule_forward<T>(Stream, T*, T*, const T*, const T*, const T*, const T*, const T*,         \
                                            const T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t,        \
                                            int64_t);                                                               \
  template void gated_delta_rule_backward<T>(Stream, T*, T*, T*, T*, T*, T*, T*, T*, const T*, const T*, const T*,    \
                                             const T*, const T*, const T*, const T*, const T*, int64_t, int64_t,    \
                                             int64_t, int64_t, int64_t, int64_t);                                   \
  template void gated_rmsnorm_forward<T>(Stream, T*, const T*, const T*, const T*, int64_t, int64_t, double);         \
  template void gated_rmsnorm_backward<T>(Stream, T*, T*, T*, const T*, const T*, const T*, const T*, int64_t,        \
                                          int64_t, double);
RCTS_CUDA_INSTANTIATE(float)
RCTS_CUDA_INSTANTIATE(double)
#undef RCTS_CUDA_INSTANTIATE

}  // namespace rcts::cuda
