#include "backends/cuda/cuda_backend.hpp"

#include <cuda_runtime.h>

#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <vector>

#include "backends/cpu/thread_copy_stream.hpp"
#include "backends/cuda/launch.hpp"
#include "kernels/exact/moe.hpp"
#include "reference/core/error.hpp"

namespace rcts::cuda {

namespace {

void check(cudaError_t e, const char* what, SourceLocation loc = SourceLocation::current()) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e), loc);
}
// After a launch: launches report errors only through the runtime's error state.
void launched(const char* what, SourceLocation loc = SourceLocation::current()) {
  const char* err = last_launch_error();
  if (*err) throw Error(std::string("CUDA kernel ") + what + ": " + err, loc);
}

constexpr std::align_val_t kHostAlign{64};

// Device memory from the device's stream-ordered pool, pinned host memory, and the heap,
// all ordered on the backend's main stream; copies that touch host memory wait for it.
class CudaMemory final : public MemoryResource {
 public:
  explicit CudaMemory(cudaStream_t s) : stream_(s) {}
  std::string name() const override { return "cuda"; }
  std::byte* allocate(Domain d, int64_t bytes) override {
    const size_t n = static_cast<size_t>(bytes > 0 ? bytes : 1);
    void* p = nullptr;
    switch (d) {
      case Domain::device: check(cudaMallocAsync(&p, n, stream_), "cudaMallocAsync"); break;
      case Domain::host_pinned: check(cudaHostAlloc(&p, n, cudaHostAllocDefault), "cudaHostAlloc"); break;
      case Domain::host: p = ::operator new(n, kHostAlign); break;
    }
    return static_cast<std::byte*>(p);
  }
  void deallocate(Domain d, std::byte* p, int64_t) noexcept override {
    switch (d) {
      case Domain::device: cudaFreeAsync(p, stream_); break;
      case Domain::host_pinned:
        cudaStreamSynchronize(stream_);  // no copy may still read or write it
        cudaFreeHost(p);
        break;
      case Domain::host: ::operator delete(p, kHostAlign); break;
    }
  }
  void fill(Domain d, std::byte* p, uint8_t value, int64_t bytes) override {
    if (bytes <= 0) return;
    if (d == Domain::device) {
      cuda::fill(stream_, p, value, bytes);
      launched("fill");
    } else {
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      std::memset(p, value, static_cast<size_t>(bytes));
    }
  }
  void copy(std::byte* dst, Domain dd, const std::byte* src, Domain sd, int64_t bytes) override {
    if (bytes <= 0 || dst == src) return;
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
    if (dd != Domain::device || sd != Domain::device) check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  bool host_accessible(Domain d) const override { return d != Domain::device; }

 private:
  cudaStream_t stream_;
};

// A host array uploaded to the device for one op (index arrays, summation orders).
template <typename I> class Upload {
 public:
  Upload(MemoryResource& m, std::span<const I> host)
      : m_(m), bytes_(static_cast<int64_t>(host.size_bytes())), p_(m.allocate(Domain::device, bytes_)) {
    m_.copy(p_, Domain::device, reinterpret_cast<const std::byte*>(host.data()), Domain::host, bytes_);
  }
  ~Upload() { m_.deallocate(Domain::device, p_, bytes_); }
  Upload(const Upload&) = delete;
  Upload& operator=(const Upload&) = delete;
  const I* p() const { return reinterpret_cast<const I*>(p_); }

 private:
  MemoryResource& m_;
  int64_t bytes_;
  std::byte* p_;
};

// One device scalar that an op writes and the host reads back.
template <typename T> T read_scalar(MemoryResource& m, const std::function<void(T*)>& op) {
  std::byte* p = m.allocate(Domain::device, sizeof(T));
  T value{};
  try {
    op(reinterpret_cast<T*>(p));
    m.copy(reinterpret_cast<std::byte*>(&value), Domain::host, p, Domain::device, sizeof(T));
  } catch (...) {
    m.deallocate(Domain::device, p, sizeof(T));
    throw;
  }
  m.deallocate(Domain::device, p, sizeof(T));
  return value;
}

void check_dropout_p(double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument("dropout: probability must be in [0, 1], got " + std::to_string(p));
}

template <typename T> class CudaOps final : public Ops<T> {
 public:
  CudaOps(cudaStream_t s, MemoryResource& m) : s_(s), m_(m) {}

  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
            T* C, int64_t ldc, bool accumulate) override {
    cuda::gemm<T>(s_, ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, accumulate);
    launched("gemm");
  }
  void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
                    const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
                    bool accumulate) override {
    cuda::gemm<T>(s_, ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, accumulate);
    launched("gemm_batched");
  }
  void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                         double eps) override {
    cuda::layernorm_forward<T>(s_, out, inp, weight, bias, N, C, eps);
    launched("layernorm_forward");
  }
  void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                          int64_t C, double eps) override {
    const int64_t bytes = 2 * N * static_cast<int64_t>(sizeof(T));
    std::byte* stats = m_.allocate(Domain::device, bytes);
    T* means = reinterpret_cast<T*>(stats);
    cuda::layernorm_backward<T>(s_, dinp, dweight, dbias, dout, inp, weight, N, C, eps, means, means + N);
    m_.deallocate(Domain::device, stats, bytes);
    launched("layernorm_backward");
  }
  void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S) override {
    cuda::softmax_causal_forward<T>(s_, out, inp, BH, S);
    launched("softmax_causal_forward");
  }
  void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) override {
    cuda::softmax_causal_backward<T>(s_, dinp, dout, out, BH, S);
    launched("softmax_causal_backward");
  }
  void dropout_apply(T* out, const T* inp, const uint8_t* mask, int64_t n, double p) override {
    check_dropout_p(p);
    cuda::dropout_apply<T>(s_, out, inp, mask, n, p);
    launched("dropout_apply");
  }
  void gelu_forward(T* out, const T* inp, int64_t n) override {
    cuda::gelu_forward<T>(s_, out, inp, n);
    launched("gelu_forward");
  }
  void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n) override {
    cuda::gelu_backward<T>(s_, dinp, dout, inp, n);
    launched("gelu_backward");
  }
  void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F) override {
    cuda::swiglu_forward<T>(s_, out, inp, N, F);
    launched("swiglu_forward");
  }
  void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) override {
    cuda::swiglu_backward<T>(s_, dinp, dout, inp, N, F);
    launched("swiglu_backward");
  }
  void add(T* out, const T* a, const T* b, int64_t n) override {
    cuda::add<T>(s_, out, a, b, n);
    launched("add");
  }
  void bias_add(T* out, const T* inp, const T* bias, int64_t N, int64_t C) override {
    cuda::bias_add<T>(s_, out, inp, bias, N, C);
    launched("bias_add");
  }
  void bias_backward(T* dbias, const T* dout, int64_t N, int64_t C) override {
    cuda::bias_backward<T>(s_, dbias, dout, N, C);
    launched("bias_backward");
  }
  void scale(T* out, const T* inp, T s, int64_t n) override {
    cuda::scale<T>(s_, out, inp, s, n);
    launched("scale");
  }
  void sum_blocks(T* out, const T* blocks, int64_t n, std::span<const int> order) override {
    if (order.empty() || n <= 0) return;
    Upload<int> o(m_, order);
    cuda::sum_blocks<T>(s_, out, blocks, n, o.p(), static_cast<int>(order.size()));
    launched("sum_blocks");
  }
  T mse_loss(const T* y, const T* target, int64_t n) override {
    return read_scalar<T>(m_, [&](T* r) {
      cuda::mse_loss<T>(s_, r, y, target, n);
      launched("mse_loss");
    });
  }
  void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n) override {
    cuda::mse_loss_backward<T>(s_, dy, y, target, n);
    launched("mse_loss_backward");
  }
  void sgd_step(T* w, const T* g, int64_t n, T lr) override {
    cuda::sgd_step<T>(s_, w, g, n, lr);
    launched("sgd_step");
  }
  void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) override {
    cuda::row_softmax_forward<T>(s_, out, in, rows, cols);
    launched("row_softmax_forward");
  }
  void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) override {
    cuda::row_softmax_backward<T>(s_, din, dout, out, rows, cols);
    launched("row_softmax_backward");
  }
  void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) override {
    if (k < 1 || k > experts || experts > exact::kMaxExperts)
      throw std::invalid_argument("moe top-k: k = " + std::to_string(k) + " must be in [1, " +
                                  std::to_string(experts) + "] and experts at most " +
                                  std::to_string(exact::kMaxExperts));
    cuda::topk_select<T>(s_, topk, weights, probs, tokens, experts, k);
    launched("topk_select");
  }
  T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
             double coeff) override {
    return read_scalar<T>(m_, [&](T* r) {
      cuda::aux_loss<T>(s_, r, probs, topk, tokens, experts, k, coeff);
      launched("aux_loss");
    });
  }
  void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                    int64_t k) override {
    cuda::topk_scatter<T>(s_, dprobs, topk, dweights, tokens, experts, k);
    launched("topk_scatter");
  }
  void moe_combine(T* out, const T* weights, const T* expert_out, std::span<const int64_t> position, const T* shared,
                   int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    Upload<int64_t> pos(m_, position);
    cuda::moe_combine<T>(s_, out, weights, expert_out, pos.p(), shared, tokens, K, h);
    launched("moe_combine");
  }
  void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                            std::span<const int64_t> position, int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    Upload<int64_t> pos(m_, position);
    cuda::moe_combine_backward<T>(s_, dexpert, dweights, dout, weights, expert_out, pos.p(), tokens, K, h);
    launched("moe_combine_backward");
  }
  void moe_input_grad(T* dx, const T* dsent, std::span<const int64_t> position, const T* drouter, const T* dshared,
                      int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    Upload<int64_t> pos(m_, position);
    cuda::moe_input_grad<T>(s_, dx, dsent, pos.p(), drouter, dshared, tokens, K, h);
    launched("moe_input_grad");
  }

 private:
  static void check_positions(std::span<const int64_t> position, int64_t tokens, int64_t K) {
    RCTS_CHECK(static_cast<int64_t>(position.size()) == tokens * K,
               "moe combine: " + std::to_string(position.size()) + " positions for " + std::to_string(tokens) +
                   " tokens x top-" + std::to_string(K));
  }
  cudaStream_t s_;
  MemoryResource& m_;
};

Elem elem_of(DType t) {
  switch (t) {
    case DType::f64: return Elem::f64;
    case DType::f32: return Elem::f32;
    case DType::bf16: return Elem::bf16;
    case DType::u8: return Elem::u8;
    case DType::i32: return Elem::i32;
    case DType::i64: return Elem::i64;
  }
  throw Error("convert: unknown dtype");
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    check(cudaSetDevice(0), "cudaSetDevice(0)");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    memory_ = std::make_unique<CudaMemory>(stream_);
    f32_ = std::make_unique<CudaOps<float>>(stream_, *memory_);
    f64_ = std::make_unique<CudaOps<double>>(stream_, *memory_);
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    description_ = std::string("CUDA exact tier on ") + prop.name + " (sm_" + std::to_string(prop.major) +
                   std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs), runtime " +
                   std::to_string(runtime) + ", driver " + std::to_string(driver);
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  std::string name() const override { return "cuda"; }
  std::string golden_name() const override { return "cpu"; }
  std::string description() const override { return description_; }
  Ops<float>& f32() override { return *f32_; }
  Ops<double>& f64() override { return *f64_; }
  MemoryResource& memory() override { return *memory_; }

  void convert(void* dst, DType dst_type, const void* src, DType src_type, int64_t n) override {
    if (n <= 0) return;
    cuda::convert(stream_, dst, elem_of(dst_type), src, elem_of(src_type), n);
    launched("convert");
  }
  void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    check_elem(elem_bytes);
    cuda::tokens_to_heads(stream_, heads, tok, elem_bytes, width, col0, s, b, a, d);
    launched("tokens_to_heads");
  }
  void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    check_elem(elem_bytes);
    cuda::heads_to_tokens(stream_, tok, heads, elem_bytes, width, col0, s, b, a, d);
    launched("heads_to_tokens");
  }
  void gather_rows(void* dst, const void* src, int64_t row_bytes, int64_t src_rows,
                   std::span<const int64_t> index) override {
    for (const int64_t i : index)
      if (i < 0 || i >= src_rows)
        throw std::out_of_range("gather_rows: row " + std::to_string(i) + " out of range (" + std::to_string(src_rows) +
                                " rows)");
    if (index.empty() || row_bytes == 0) return;
    Upload<int64_t> idx(*memory_, index);
    cuda::gather_rows(stream_, dst, src, row_bytes, idx.p(), static_cast<int64_t>(index.size()));
    launched("gather_rows");
  }
  void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) override {
    check_dropout_p(p);
    if (n <= 0) return;
    cuda::dropout_mask(stream_, mask, n, p, seed, offset);
    launched("dropout_mask");
  }
  std::unique_ptr<CopyStream> make_copy_stream(const std::string& name, LinkModel link) override {
    // Copies run through the memory resource (ordered on the main stream); the worker
    // thread gives the offload machinery its strict or timed semantics (design §9).
    return std::make_unique<cpu::ThreadCopyStream>(name, link);
  }

 private:
  static void check_elem(int bytes) {
    if (bytes != 2 && bytes != 4 && bytes != 8)
      throw std::invalid_argument("head permute: unsupported element size " + std::to_string(bytes));
  }
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaMemory> memory_;
  std::unique_ptr<CudaOps<float>> f32_;
  std::unique_ptr<CudaOps<double>> f64_;
  std::string description_;
};

}  // namespace

std::string unavailable_reason() {
  int count = 0;  // cudaGetDeviceCount leaves it unwritten without a driver
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error for later calls
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
  }
  if (count == 0) return "no CUDA device";
  return {};
}

std::unique_ptr<Backend> make_cuda_backend() {
  if (const std::string why = unavailable_reason(); !why.empty()) throw Error("backend 'cuda' cannot run here: " + why);
  return std::make_unique<CudaBackend>();
}

}  // namespace rcts::cuda
