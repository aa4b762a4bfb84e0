// The CUDA exact tier's kernels as plain host functions (C++17, raw device pointers):
// each launches one thread per output on `stream` and runs the exact-tier body of
// kernels/exact for it, so results do not depend on the launch shape. Declared here,
// defined in kernels.cu; cuda_backend.cpp calls them behind the backend interface.
// Index arrays (`index`, `position`, `order`) are device memory here.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/common/bf16.hpp"
#include "kernels/common/gemm_contract.hpp"

namespace rcts::cuda {

using Stream = void*;  // a cudaStream_t

template <typename T>
void gemm(Stream s, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
          const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch, bool accumulate);
template <typename T>
void layernorm_forward(Stream s, T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C, double eps);
// means/rstds: N elements of device scratch.
template <typename T>
void layernorm_backward(Stream s, T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                        int64_t C, double eps, T* means, T* rstds);
template <typename T> void softmax_causal_forward(Stream s, T* out, const T* inp, int64_t BH, int64_t S);
template <typename T> void softmax_causal_backward(Stream s, T* dinp, const T* dout, const T* out, int64_t BH, int64_t S);
template <typename T> void dropout_apply(Stream s, T* out, const T* inp, const uint8_t* mask, int64_t n, double p);
template <typename T> void gelu_forward(Stream s, T* out, const T* inp, int64_t n);
template <typename T> void gelu_backward(Stream s, T* dinp, const T* dout, const T* inp, int64_t n);
template <typename T> void swiglu_forward(Stream s, T* out, const T* inp, int64_t N, int64_t F);
template <typename T> void swiglu_backward(Stream s, T* dinp, const T* dout, const T* inp, int64_t N, int64_t F);
template <typename T> void add(Stream s, T* out, const T* a, const T* b, int64_t n);
template <typename T> void bias_add(Stream s, T* out, const T* inp, const T* bias, int64_t N, int64_t C);
template <typename T> void bias_backward(Stream s, T* dbias, const T* dout, int64_t N, int64_t C);
template <typename T> void scale(Stream s, T* out, const T* inp, T factor, int64_t n);
template <typename T> void sum_blocks(Stream s, T* out, const T* blocks, int64_t n, const int* order, int nblocks);
// The loss into one device scalar.
template <typename T> void mse_loss(Stream s, T* result, const T* y, const T* target, int64_t n);
template <typename T> void mse_loss_backward(Stream s, T* dy, const T* y, const T* target, int64_t n);
template <typename T> void sgd_step(Stream s, T* w, const T* g, int64_t n, T lr);
template <typename T> void row_softmax_forward(Stream s, T* out, const T* in, int64_t rows, int64_t cols);
template <typename T> void row_softmax_backward(Stream s, T* din, const T* dout, const T* out, int64_t rows, int64_t cols);
template <typename T>
void topk_select(Stream s, int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k);
template <typename T>
void aux_loss(Stream s, T* result, const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
              double coeff);
template <typename T>
void topk_scatter(Stream s, T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts, int64_t k);
template <typename T>
void moe_combine(Stream s, T* out, const T* weights, const T* expert_out, const int64_t* position, const T* shared,
                 int64_t tokens, int64_t K, int64_t h);
template <typename T>
void moe_combine_backward(Stream s, T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                          const int64_t* position, int64_t tokens, int64_t K, int64_t h);
template <typename T>
void moe_input_grad(Stream s, T* dx, const T* dsent, const int64_t* position, const T* drouter, const T* dshared,
                    int64_t tokens, int64_t K, int64_t h);

// Gated delta net (kernels/exact/gdn.hpp). `scratch` is device memory of
// B*Hv*exact::gdn_forward_scratch elements (forward) or
// B*Hv*(exact::gdn_backward_scratch + 2*S*Dk + S) elements (backward).
template <typename T>
void causal_conv_silu_forward(Stream s, T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S,
                              int64_t D, int64_t K);
template <typename T>
void causal_conv_silu_backward(Stream s, T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B,
                               int64_t H, int64_t S, int64_t D, int64_t K);
template <typename T>
void gated_delta_rule_forward(Stream s, T* out, T* scratch, const T* q, const T* k, const T* v, const T* a, const T* b,
                              const T* A_log, const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S,
                              int64_t Dk, int64_t Dv);
template <typename T>
void gated_delta_rule_backward(Stream s, T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, T* scratch,
                               const T* dout, const T* q, const T* k, const T* v, const T* a, const T* b,
                               const T* A_log, const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S,
                               int64_t Dk, int64_t Dv);
template <typename T>
void gated_rmsnorm_forward(Stream s, T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D, double eps);
template <typename T>
void gated_rmsnorm_backward(Stream s, T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z, const T* weight,
                            int64_t N, int64_t D, double eps);

// Element type codes for convert (the reference's DType order: f64, f32, bf16, u8, i32, i64).
enum class Elem : int { f64, f32, bf16, u8, i32, i64 };
void convert(Stream s, void* dst, Elem dst_type, const void* src, Elem src_type, int64_t n);
void tokens_to_heads(Stream s, void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t S,
                     int64_t B, int64_t A, int64_t D);
void heads_to_tokens(Stream s, void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t S,
                     int64_t B, int64_t A, int64_t D);
void gather_rows(Stream s, void* dst, const void* src, int64_t row_bytes, const int64_t* index, int64_t n);
void dropout_mask(Stream s, uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset);
void fill(Stream s, void* p, uint8_t value, int64_t bytes);
// A single thread spinning for about `nanoseconds` (the copy streams' test-only delay).
void spin(Stream s, int64_t nanoseconds);

// The first failed launch on this thread since the last call, as "kernel: reason"
// ("" when none), then forgets it: launches do not throw by themselves (the backend
// checks after every op, cuda_support.hpp).
std::string take_launch_error();

// Threads per block requested of every launch (default 256), for tests that show results
// do not depend on the launch shape; a kernel that cannot run that many gets fewer
// (launch_shape.hpp). Process-wide; a multiple of 32 in [32, 1024] (false and unchanged
// otherwise).
bool set_threads_per_block(int threads);
int threads_per_block();

}  // namespace rcts::cuda
