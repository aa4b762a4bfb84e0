// The backend seam (docs/design.md §11). Everything the reference does to numbers
// and to bytes goes through one Backend: the arithmetic ops in the compute type
// (Ops<float>, Ops<double>), dtype-agnostic data movement, the dropout mask, the
// memory of the three domains (MemoryResource) and copy streams. Modules hold no
// arithmetic loops and include no kernel header; adding a backend means implementing
// this interface (backends/cpu is the reference one) and registering it
// (backends/registry.hpp).
//
// Conventions (llm.c style): outputs first, then inputs, then sizes; shapes beside the
// pointers. Every pointer is in the backend's device domain unless it is a
// std::span of host indices (the MoE plans are built on the host). Outputs are
// written (=) unless the op says it accumulates (+=). Every op's result is a pure
// function of its inputs: the reduction orders are the contracts in docs/design.md
// §2 and in the CPU kernels' headers (kernels/cpu/*.hpp), which every backend that
// claims the CPU's golden files must follow bit for bit.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "kernels/common/gemm_contract.hpp"
#include "reference/backend/fused_attention.hpp"
#include "reference/backend/stream.hpp"
#include "reference/core/dtype.hpp"
#include "reference/core/memory_resource.hpp"
#include "reference/parallel/communicator.hpp"

namespace rcts {

template <typename T>
class Ops {
 public:
  virtual ~Ops() = default;

  // --- GEMM: C[M,N] = (accumulate ? C : 0) + op(A) op(B), order of kernels/cpu/gemm.hpp.
  virtual void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
                    int64_t ldb, T* C, int64_t ldc, bool accumulate) = 0;
  // `batch` independent products, operand i at A + i*stride_a (B, C likewise).
  virtual void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                            int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc,
                            int64_t stride_c, int64_t batch, bool accumulate) = 0;

  // --- normalisation and attention (kernels/cpu/layernorm.hpp, softmax.hpp)
  virtual void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                                 double eps) = 0;                       // (N, C)
  virtual void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                                  int64_t N, int64_t C, double eps) = 0;  // dweight, dbias +=
  virtual void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S) = 0;  // (BH, S, S), in place ok
  virtual void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) = 0;

  // --- dropout: out = (inp * mask) * 1/(1-p), forward and backward alike (dropout.hpp)
  virtual void dropout_apply(T* out, const T* inp, const uint8_t* mask, int64_t n, double p) = 0;

  // --- activations (kernels/cpu/activation.hpp)
  virtual void gelu_forward(T* out, const T* inp, int64_t n) = 0;
  virtual void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n) = 0;
  virtual void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F) = 0;               // inp (N, 2F)
  virtual void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) = 0;

  // --- element-wise (kernels/cpu/elementwise.hpp); outputs may alias inputs
  virtual void add(T* out, const T* a, const T* b, int64_t n) = 0;
  virtual void bias_add(T* out, const T* inp, const T* bias, int64_t N, int64_t C) = 0;
  virtual void bias_backward(T* dbias, const T* dout, int64_t N, int64_t C) = 0;  // dbias += column sums
  virtual void scale(T* out, const T* inp, T s, int64_t n) = 0;
  // The ordered rank sum of a reduction: out = blocks[order[0]] + blocks[order[1]] + ...
  virtual void sum_blocks(T* out, const T* blocks, int64_t n, std::span<const int> order) = 0;

  // --- loss and optimizer (kernels/cpu/loss.hpp); the loss comes back to the host
  virtual T mse_loss(const T* y, const T* target, int64_t n) = 0;
  virtual void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n) = 0;
  virtual void sgd_step(T* w, const T* g, int64_t n, T lr) = 0;

  // --- MoE (kernels/cpu/moe.hpp); `position` is a host index array (tokens * K)
  virtual void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) = 0;
  virtual void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) = 0;
  virtual void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts,
                           int64_t k) = 0;
  virtual T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
                     double coeff) = 0;
  virtual void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                            int64_t k) = 0;
  virtual void moe_combine(T* out, const T* weights, const T* expert_out, std::span<const int64_t> position,
                           const T* shared, int64_t tokens, int64_t K, int64_t h) = 0;
  virtual void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                                    std::span<const int64_t> position, int64_t tokens, int64_t K, int64_t h) = 0;
  virtual void moe_input_grad(T* dx, const T* dsent, std::span<const int64_t> position, const T* drouter,
                              const T* dshared, int64_t tokens, int64_t K, int64_t h) = 0;

  // --- gated delta net (kernels/cpu/gdn.hpp, orders in kernels/exact/gdn.hpp; design §15)
  // Heads (B, H, S, D); conv weight (H*D, K): causal depthwise conv over S, then SiLU.
  virtual void causal_conv_silu_forward(T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S,
                                        int64_t D, int64_t K) = 0;
  virtual void causal_conv_silu_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B,
                                         int64_t H, int64_t S, int64_t D, int64_t K) = 0;  // dweight +=
  // q, k (B, Hk, S, Dk) l2-normalised inside; v, out (B, Hv, S, Dv); a, b (B, Hv, S) the
  // raw decay and write-strength inputs; A_log, dt_bias (Hv).
  virtual void gated_delta_rule_forward(T* out, const T* q, const T* k, const T* v, const T* a, const T* b,
                                        const T* A_log, const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S,
                                        int64_t Dk, int64_t Dv) = 0;
  virtual void gated_delta_rule_backward(T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, const T* dout,
                                         const T* q, const T* k, const T* v, const T* a, const T* b, const T* A_log,
                                         const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk,
                                         int64_t Dv) = 0;  // dA_log, ddt_bias +=
  // RMSNorm(x) * weight * SiLU(z) per row of D.
  virtual void gated_rmsnorm_forward(T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D,
                                     double eps) = 0;
  virtual void gated_rmsnorm_backward(T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z,
                                      const T* weight, int64_t N, int64_t D, double eps) = 0;  // dweight +=
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The name cases and reports use ("cpu", "cpu-scalar", "cuda").
  virtual std::string name() const = 0;
  // The golden files this backend must reproduce bit for bit: its own name, or the
  // name of the backend whose arithmetic it shares (golden/<golden_name()>/).
  virtual std::string golden_name() const { return name(); }
  // One line for reports: kernel paths, device, versions.
  virtual std::string description() const = 0;
  // False for a tier whose bits depend on the GPU model and library versions (cuBLAS):
  // it keeps no golden files, and golden checks skip on it with the reason.
  virtual bool has_goldens() const { return true; }

  // Device scratch the ops need for the backend's lifetime of a run (cuBLASLt's fixed
  // workspace): the Runtime allocates it through its tracker, so budgets see it, and
  // binds it; 0 when none.
  virtual int64_t op_workspace_bytes() const { return 0; }
  virtual void bind_op_workspace(std::byte* p, int64_t bytes) { (void)p, (void)bytes; }

  // The communicator for this backend's device memory in a multi-rank run, built over
  // the host world (NCCL bootstrapped through MPI); null when the host world's own
  // collectives can move its bytes (the CPU).
  virtual std::unique_ptr<Communicator> make_world(Communicator& host_world) {
    (void)host_world;
    return nullptr;
  }

  // The device allocator's own used-bytes high-water mark since the last reset, for a
  // cross-check of the tracker's exact device peak (the pool rounds up and frees in
  // stream order, so it can only be higher); nullopt when the backend has no pool.
  virtual std::optional<int64_t> device_pool_high_water() const { return std::nullopt; }
  virtual void reset_device_pool_high_water() {}

  // Fused causal attention with the library's own dropout rule (fused_attention.hpp), which
  // model.flash_attention runs on; null when the backend has none (the CPU backends).
  virtual FusedAttention* fused_attention() { return nullptr; }

  virtual Ops<float>& f32() = 0;
  virtual Ops<double>& f64() = 0;
  template <typename T> Ops<T>& ops();

  virtual MemoryResource& memory() = 0;

  // --- dtype-agnostic data movement (device pointers)
  // dst[i] = dst_type(src[i]): bf16 narrowing rounds to nearest even (kernels/common/bf16.hpp).
  virtual void convert(void* dst, DType dst_type, const void* src, DType src_type, int64_t n) = 0;
  // Token layout (s, b, width) at column col0 <-> heads (b, a, s, d) (kernels/cpu/layout.hpp).
  virtual void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0,
                               int64_t s, int64_t b, int64_t a, int64_t d) = 0;
  virtual void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0,
                               int64_t s, int64_t b, int64_t a, int64_t d) = 0;
  // dst row i = src row index[i] (rows of row_bytes; index is host memory).
  virtual void gather_rows(void* dst, const void* src, int64_t row_bytes, int64_t src_rows,
                           std::span<const int64_t> index) = 0;
  // The dropout rule (kernels/common/dropout_rule.hpp): mask[i] = 1 (keep) or 0.
  virtual void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) = 0;

  // --- copy streams for offload (stream.hpp)
  virtual std::unique_ptr<CopyStream> make_copy_stream(const std::string& name, LinkModel link) = 0;
};

template <> inline Ops<float>& Backend::ops<float>() { return f32(); }
template <> inline Ops<double>& Backend::ops<double>() { return f64(); }

}  // namespace rcts
