#include "backends/cpu/cpu_backend.hpp"

#include <stdexcept>

#include "backends/cpu/gdn_ops.hpp"
#include "backends/cpu/thread_copy_stream.hpp"
#include "kernels/cpu/activation.hpp"
#include "kernels/cpu/dropout.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/layernorm.hpp"
#include "kernels/cpu/layout.hpp"
#include "kernels/cpu/loss.hpp"
#include "kernels/cpu/moe.hpp"
#include "kernels/cpu/softmax.hpp"
#include "reference/core/by_dtype.hpp"
#include "reference/core/error.hpp"

namespace rcts::cpu {

namespace {

template <typename T>
class CpuOps final : public GdnOpsOnHost<T> {
 public:
  explicit CpuOps(const KernelPaths& paths) : paths_(paths) {}

  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
            T* C, int64_t ldc, bool accumulate) override {
    cpu::gemm<T>(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate, paths_.gemm);
  }
  void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
                    const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
                    bool accumulate) override {
    cpu::gemm_batched<T>(ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, accumulate,
                         paths_.gemm);
  }
  void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                         double eps) override {
    cpu::layernorm_forward(out, inp, weight, bias, N, C, eps);
  }
  void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                          int64_t C, double eps) override {
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, N, C, eps);
  }
  void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S) override {
    cpu::softmax_causal_forward(out, inp, BH, S, paths_.softmax);
  }
  void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) override {
    cpu::softmax_causal_backward(dinp, dout, out, BH, S);
  }
  void dropout_apply(T* out, const T* inp, const uint8_t* mask, int64_t n, double p) override {
    cpu::dropout_forward(out, inp, mask, n, p);
  }
  void gelu_forward(T* out, const T* inp, int64_t n) override { cpu::gelu_forward(out, inp, n, paths_.activation); }
  void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n) override {
    cpu::gelu_backward(dinp, dout, inp, n, paths_.activation);
  }
  void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F) override {
    cpu::swiglu_forward(out, inp, N, F, paths_.activation);
  }
  void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) override {
    cpu::swiglu_backward(dinp, dout, inp, N, F, paths_.activation);
  }
  void add(T* out, const T* a, const T* b, int64_t n) override { cpu::add(out, a, b, n); }
  void bias_add(T* out, const T* inp, const T* bias, int64_t N, int64_t C) override {
    cpu::bias_add(out, inp, bias, N, C);
  }
  void bias_backward(T* dbias, const T* dout, int64_t N, int64_t C) override { cpu::bias_backward(dbias, dout, N, C); }
  void scale(T* out, const T* inp, T s, int64_t n) override { cpu::scale(out, inp, s, n); }
  void sum_blocks(T* out, const T* blocks, int64_t n, std::span<const int> order) override {
    cpu::sum_blocks(out, blocks, n, order.data(), static_cast<int>(order.size()));
  }
  T mse_loss(const T* y, const T* target, int64_t n) override { return cpu::mse_loss(y, target, n); }
  void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n) override {
    cpu::mse_loss_backward(dy, y, target, n);
  }
  void sgd_step(T* w, const T* g, int64_t n, T lr) override { cpu::sgd_step(w, g, n, lr); }
  void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) override {
    cpu::row_softmax_forward(out, in, rows, cols);
  }
  void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) override {
    cpu::row_softmax_backward(din, dout, out, rows, cols);
  }
  void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) override {
    cpu::topk_select(topk, weights, probs, tokens, experts, k);
  }
  T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
             double coeff) override {
    return cpu::aux_loss(probs, topk, tokens, experts, k, coeff);
  }
  void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                    int64_t k) override {
    cpu::topk_scatter(dprobs, topk, dweights, tokens, experts, k);
  }
  void moe_combine(T* out, const T* weights, const T* expert_out, std::span<const int64_t> position, const T* shared,
                   int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    cpu::moe_combine(out, weights, expert_out, position.data(), shared, tokens, K, h);
  }
  void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                            std::span<const int64_t> position, int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    cpu::moe_combine_backward(dexpert, dweights, dout, weights, expert_out, position.data(), tokens, K, h);
  }
  void moe_input_grad(T* dx, const T* dsent, std::span<const int64_t> position, const T* drouter, const T* dshared,
                      int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    cpu::moe_input_grad(dx, dsent, position.data(), drouter, dshared, tokens, K, h);
  }

 private:
  static void check_positions(std::span<const int64_t> position, int64_t tokens, int64_t K) {
    RCTS_CHECK(static_cast<int64_t>(position.size()) == tokens * K,
               "moe combine: " + std::to_string(position.size()) + " positions for " + std::to_string(tokens) +
                   " tokens x top-" + std::to_string(K));
  }
  KernelPaths paths_;
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::string name, KernelPaths paths, std::string golden)
      : name_(std::move(name)), golden_(std::move(golden)), paths_(paths), f32_(paths), f64_(paths) {}

  std::string name() const override { return name_; }
  std::string golden_name() const override { return golden_; }
  std::string description() const override {
    // The paths that run now (automatic resolved).
    auto vec = [](VecPath p, VecPath active) {
      return std::string(vec_path_name(p == VecPath::automatic ? active : p));
    };
    const GemmPath g = paths_.gemm == GemmPath::automatic ? active_gemm_path() : paths_.gemm;
    return "cpu kernels: gemm " + std::string(gemm_path_name(g)) + ", activation " +
           vec(paths_.activation, active_activation_path()) + ", dropout " +
           vec(paths_.dropout, active_dropout_path()) + ", softmax " + vec(paths_.softmax, active_softmax_path());
  }
  Ops<float>& f32() override { return f32_; }
  Ops<double>& f64() override { return f64_; }
  MemoryResource& memory() override { return host_memory(); }

  void convert(void* dst, DType dst_type, const void* src, DType src_type, int64_t n) override {
    by_dtype(dst_type, [&]<typename D>() {
      by_dtype(src_type, [&]<typename S>() { cpu::convert(static_cast<D*>(dst), static_cast<const S*>(src), n); });
    });
  }
  void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    cpu::tokens_to_heads(heads, tok, elem_bytes, width, col0, s, b, a, d);
  }
  void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    cpu::heads_to_tokens(tok, heads, elem_bytes, width, col0, s, b, a, d);
  }
  void gather_rows(void* dst, const void* src, int64_t row_bytes, int64_t src_rows,
                   std::span<const int64_t> index) override {
    cpu::gather_rows(dst, src, row_bytes, src_rows, index.data(), static_cast<int64_t>(index.size()));
  }
  void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) override {
    cpu::dropout_mask(mask, n, p, seed, offset, paths_.dropout);
  }
  std::unique_ptr<CopyStream> make_copy_stream(const std::string& name, LinkModel link) override {
    return std::make_unique<ThreadCopyStream>(name, link);
  }

 private:
  std::string name_, golden_;
  KernelPaths paths_;
  CpuOps<float> f32_;
  CpuOps<double> f64_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(std::string name, KernelPaths paths, std::string golden_name) {
  return std::make_unique<CpuBackend>(std::move(name), paths, std::move(golden_name));
}

std::unique_ptr<Backend> make_cpu_backend() { return make_backend("cpu", KernelPaths{}, "cpu"); }

std::unique_ptr<Backend> make_cpu_scalar_backend() {
  return make_backend("cpu-scalar", KernelPaths{GemmPath::portable, VecPath::scalar, VecPath::scalar, VecPath::scalar},
                      "cpu");
}

Backend& default_backend() {
  static const std::unique_ptr<Backend> cpu = make_cpu_backend();
  return *cpu;
}

}  // namespace rcts::cpu
