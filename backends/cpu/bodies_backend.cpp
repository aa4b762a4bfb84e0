#include "backends/cpu/bodies_backend.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/gdn_ops.hpp"
#include "backends/cpu/thread_copy_stream.hpp"
#include "kernels/exact/gemm.hpp"
#include "kernels/exact/layout.hpp"
#include "kernels/exact/moe.hpp"
#include "kernels/exact/norm.hpp"
#include "kernels/exact/pointwise.hpp"
#include "reference/core/by_dtype.hpp"
#include "reference/core/error.hpp"

namespace rcts::cpu {

namespace {

// Outputs below this count run on one thread (a parallel region costs more).
constexpr int64_t kParallelMin = 1 << 14;

void check_dropout_p(double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument("dropout: probability must be in [0, 1], got " + std::to_string(p));
}

template <typename T>
class BodyOps final : public GdnOpsOnHost<T> {
 public:
  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
            T* C, int64_t ldc, bool accumulate) override {
#pragma omp parallel for schedule(static) if (M * N * K >= kParallelMin)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] = exact::gemm_element(ta, tb, i, j, K, A, lda, B, ldb, C[i * ldc + j], accumulate);
  }
  void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
                    const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
                    bool accumulate) override {
#pragma omp parallel for schedule(static) if (batch * M * N * K >= kParallelMin)
    for (int64_t x = 0; x < batch * M; ++x) {
      const int64_t bi = x / M, i = x % M;
      T* c = C + bi * stride_c;
      for (int64_t j = 0; j < N; ++j)
        c[i * ldc + j] = exact::gemm_element(ta, tb, i, j, K, A + bi * stride_a, lda, B + bi * stride_b, ldb,
                                             c[i * ldc + j], accumulate);
    }
  }
  void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                         double eps) override {
    const T teps = static_cast<T>(eps);
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
    for (int64_t r = 0; r < N; ++r) exact::layernorm_forward_row(out + r * C, inp + r * C, weight, bias, C, teps);
  }
  void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                          int64_t C, double eps) override {
    const T teps = static_cast<T>(eps);
    std::vector<T> means(static_cast<size_t>(N)), rstds(static_cast<size_t>(N));
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
    for (int64_t r = 0; r < N; ++r)
      exact::layernorm_input_grad_row(dinp + r * C, dout + r * C, inp + r * C, weight, C, teps,
                                      means[static_cast<size_t>(r)], rstds[static_cast<size_t>(r)]);
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
    for (int64_t c = 0; c < C; ++c)
      exact::layernorm_param_grad_column(dweight, dbias, c, dout, inp, means.data(), rstds.data(), N, C);
  }
  void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S) override {
#pragma omp parallel for schedule(static) if (BH * S * S >= kParallelMin)
    for (int64_t row = 0; row < BH * S; ++row) exact::softmax_causal_row(out + row * S, inp + row * S, row % S, S);
  }
  void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) override {
#pragma omp parallel for schedule(static) if (BH * S * S >= kParallelMin)
    for (int64_t row = 0; row < BH * S; ++row)
      exact::softmax_causal_backward_row(dinp + row * S, dout + row * S, out + row * S, row % S, S);
  }
  void dropout_apply(T* out, const T* inp, const uint8_t* mask, int64_t n, double p) override {
    check_dropout_p(p);
    const T scale = exact::dropout_scale<T>(p);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = exact::dropout_apply(inp[i], mask[i], p, scale);
  }
  void gelu_forward(T* out, const T* inp, int64_t n) override {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = exact::gelu_forward(inp[i]);
  }
  void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n) override {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) dinp[i] = exact::gelu_backward(dout[i], inp[i]);
  }
  void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F) override {
#pragma omp parallel for schedule(static) if (N * F >= kParallelMin)
    for (int64_t x = 0; x < N * F; ++x) {
      const int64_t r = x / F, f = x % F;
      out[x] = exact::swiglu_forward(inp[r * 2 * F + f], inp[r * 2 * F + F + f]);
    }
  }
  void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) override {
#pragma omp parallel for schedule(static) if (N * F >= kParallelMin)
    for (int64_t x = 0; x < N * F; ++x) {
      const int64_t r = x / F, f = x % F;
      T da, db;  // both inputs read before either is written: dinp may alias inp
      exact::swiglu_backward(dout[x], inp[r * 2 * F + f], inp[r * 2 * F + F + f], da, db);
      dinp[r * 2 * F + f] = da;
      dinp[r * 2 * F + F + f] = db;
    }
  }
  void add(T* out, const T* a, const T* b, int64_t n) override {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  }
  void bias_add(T* out, const T* inp, const T* bias, int64_t N, int64_t C) override {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
    for (int64_t x = 0; x < N * C; ++x) out[x] = inp[x] + bias[x % C];
  }
  void bias_backward(T* dbias, const T* dout, int64_t N, int64_t C) override {
#pragma omp parallel for schedule(static) if (N * C >= kParallelMin)
    for (int64_t c = 0; c < C; ++c) exact::bias_grad_column(dbias, dout, c, N, C);
  }
  void scale(T* out, const T* inp, T s, int64_t n) override {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) out[i] = inp[i] * s;
  }
  void sum_blocks(T* out, const T* blocks, int64_t n, std::span<const int> order) override {
    if (order.empty()) return;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i)
      out[i] = exact::sum_blocks(blocks, n, order.data(), static_cast<int>(order.size()), i);
  }
  T mse_loss(const T* y, const T* target, int64_t n) override { return exact::mse_loss(y, target, n); }
  void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) dy[i] = exact::mse_loss_grad(y[i], target[i], n);
  }
  void sgd_step(T* w, const T* g, int64_t n, T lr) override {
    for (int64_t i = 0; i < n; ++i) w[i] = exact::sgd_update(w[i], g[i], lr);
  }
  void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) override {
    for (int64_t r = 0; r < rows; ++r) exact::row_softmax_row(out + r * cols, in + r * cols, cols);
  }
  void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) override {
    for (int64_t r = 0; r < rows; ++r)
      exact::row_softmax_backward_row(din + r * cols, dout + r * cols, out + r * cols, cols);
  }
  void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) override {
    if (k < 1 || k > experts || experts > exact::kMaxExperts)
      throw std::invalid_argument("moe top-k: k = " + std::to_string(k) + " must be in [1, " +
                                  std::to_string(experts) + "] and experts at most " +
                                  std::to_string(exact::kMaxExperts));
    for (int64_t t = 0; t < tokens; ++t)
      exact::topk_row(topk + t * k, weights + t * k, probs + t * experts, experts, k);
  }
  T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
             double coeff) override {
    return exact::aux_loss(probs, topk, tokens, experts, k, coeff);
  }
  void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                    int64_t k) override {
    for (int64_t t = 0; t < tokens; ++t)
      exact::topk_scatter_row(dprobs + t * experts, topk + t * k, dweights + t * k, experts, k);
  }
  void moe_combine(T* out, const T* weights, const T* expert_out, std::span<const int64_t> position, const T* shared,
                   int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    for (int64_t x = 0; x < tokens * h; ++x)
      out[x] = exact::moe_combine_element(weights, expert_out, position.data(), shared, x / h, x % h, K, h);
  }
  void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                            std::span<const int64_t> position, int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    for (int64_t a = 0; a < tokens * K; ++a)
      exact::moe_combine_backward_assignment(dexpert, dweights, dout, weights, expert_out, position.data(), a, K, h);
  }
  void moe_input_grad(T* dx, const T* dsent, std::span<const int64_t> position, const T* drouter, const T* dshared,
                      int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    for (int64_t x = 0; x < tokens * h; ++x)
      dx[x] = exact::moe_input_grad_element(dsent, position.data(), drouter, dshared, x / h, x % h, K, h);
  }

 private:
  static void check_positions(std::span<const int64_t> position, int64_t tokens, int64_t K) {
    RCTS_CHECK(static_cast<int64_t>(position.size()) == tokens * K,
               "moe combine: " + std::to_string(position.size()) + " positions for " + std::to_string(tokens) +
                   " tokens x top-" + std::to_string(K));
  }
};

// The head permutes as the exact tier runs them: one element each, through the index map.
void permute(void* heads, void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s, int64_t b, int64_t a,
             int64_t d, bool to_heads) {
  if (elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8)
    throw std::invalid_argument("head permute: unsupported element size " + std::to_string(elem_bytes));
  auto* hp = static_cast<std::byte*>(heads);
  auto* tp = static_cast<std::byte*>(tok);
  const int64_t n = b * a * s * d;
  for (int64_t h = 0; h < n; ++h) {
    const int64_t t = exact::token_index_of_head_element(h, width, col0, s, b, a, d);
    if (to_heads) std::memcpy(hp + h * elem_bytes, tp + t * elem_bytes, static_cast<size_t>(elem_bytes));
    else std::memcpy(tp + t * elem_bytes, hp + h * elem_bytes, static_cast<size_t>(elem_bytes));
  }
}

class BodiesBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-exact"; }
  std::string golden_name() const override { return "cpu"; }
  std::string description() const override {
    return "the exact tier's per-output bodies (kernels/exact) in host loops";
  }
  Ops<float>& f32() override { return f32_; }
  Ops<double>& f64() override { return f64_; }
  MemoryResource& memory() override { return host_memory(); }

  void convert(void* dst, DType dst_type, const void* src, DType src_type, int64_t n) override {
    by_dtype(dst_type, [&]<typename D>() {
      by_dtype(src_type, [&]<typename S>() {
        D* out = static_cast<D*>(dst);
        const S* in = static_cast<const S*>(src);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (int64_t i = 0; i < n; ++i) out[i] = exact::convert<D, S>(in[i]);
      });
    });
  }
  void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    permute(heads, const_cast<void*>(tok), elem_bytes, width, col0, s, b, a, d, true);
  }
  void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    permute(const_cast<void*>(heads), tok, elem_bytes, width, col0, s, b, a, d, false);
  }
  void gather_rows(void* dst, const void* src, int64_t row_bytes, int64_t src_rows,
                   std::span<const int64_t> index) override {
    auto* out = static_cast<std::byte*>(dst);
    const auto* in = static_cast<const std::byte*>(src);
    for (size_t i = 0; i < index.size(); ++i) {
      if (index[i] < 0 || index[i] >= src_rows)
        throw std::out_of_range("gather_rows: row " + std::to_string(index[i]) + " out of range (" +
                                std::to_string(src_rows) + " rows)");
      if (row_bytes > 0)
        std::memcpy(out + static_cast<int64_t>(i) * row_bytes, in + index[i] * row_bytes, static_cast<size_t>(row_bytes));
    }
  }
  void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) override {
    check_dropout_p(p);
    const uint32_t thr = dropout_rule::threshold(p);
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) mask[i] = exact::dropout_mask(seed, offset, i, thr);
  }
  std::unique_ptr<CopyStream> make_copy_stream(const std::string& name, LinkModel link) override {
    return std::make_unique<ThreadCopyStream>(name, link);
  }

 private:
  BodyOps<float> f32_;
  BodyOps<double> f64_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_exact_backend() { return std::make_unique<BodiesBackend>(); }

}  // namespace rcts::cpu
