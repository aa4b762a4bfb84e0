#include "backends/cuda/cuda_backend.hpp"
#ifdef RCTS_HAVE_CUDNN
#include "backends/cuda/cudnn_attention.hpp"
#endif

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <type_traits>
#include <new>
#include <stdexcept>
#include <vector>

#include "backends/cuda/cuda_copy_stream.hpp"
#include "kernels/exact/gdn.hpp"
#include "backends/cuda/cuda_support.hpp"
#include "backends/cuda/launch.hpp"
#include "backends/cuda/lt_gemm.hpp"
#ifdef RCTS_HAVE_NCCL
#include "backends/cuda/nccl_communicator.hpp"
#endif
#include "kernels/exact/moe.hpp"
#include "reference/core/error.hpp"

namespace rcts::cuda {

namespace {

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
  // `lt`: the fast tier's cuBLASLt GEMM for float (null: the exact tier's GEMM body).
  CudaOps(cudaStream_t s, MemoryResource& m, LtGemm* lt) : s_(s), m_(m), lt_(lt) {}

  void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
            T* C, int64_t ldc, bool accumulate) override {
    gemm_batched(ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, accumulate);
  }
  void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
                    const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
                    bool accumulate) override {
    if (M <= 0 || N <= 0 || batch <= 0) return;
    if constexpr (std::is_same_v<T, float>) {
      if (lt_ && K > 0) {
        lt_->run(s_, ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, accumulate);
        return;
      }
    }
    cuda::gemm<T>(s_, ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, accumulate);
    check_launches("gemm_batched");
  }
  void layernorm_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t N, int64_t C,
                         double eps) override {
    cuda::layernorm_forward<T>(s_, out, inp, weight, bias, N, C, eps);
    check_launches("layernorm_forward");
  }
  void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t N,
                          int64_t C, double eps) override {
    const int64_t bytes = 2 * N * static_cast<int64_t>(sizeof(T));
    std::byte* stats = m_.allocate(Domain::device, bytes);
    T* means = reinterpret_cast<T*>(stats);
    cuda::layernorm_backward<T>(s_, dinp, dweight, dbias, dout, inp, weight, N, C, eps, means, means + N);
    m_.deallocate(Domain::device, stats, bytes);
    check_launches("layernorm_backward");
  }
  void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S) override {
    cuda::softmax_causal_forward<T>(s_, out, inp, BH, S);
    check_launches("softmax_causal_forward");
  }
  void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) override {
    cuda::softmax_causal_backward<T>(s_, dinp, dout, out, BH, S);
    check_launches("softmax_causal_backward");
  }
  void dropout_apply(T* out, const T* inp, const uint8_t* mask, int64_t n, double p) override {
    check_dropout_p(p);
    cuda::dropout_apply<T>(s_, out, inp, mask, n, p);
    check_launches("dropout_apply");
  }
  void gelu_forward(T* out, const T* inp, int64_t n) override {
    cuda::gelu_forward<T>(s_, out, inp, n);
    check_launches("gelu_forward");
  }
  void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n) override {
    cuda::gelu_backward<T>(s_, dinp, dout, inp, n);
    check_launches("gelu_backward");
  }
  void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F) override {
    cuda::swiglu_forward<T>(s_, out, inp, N, F);
    check_launches("swiglu_forward");
  }
  void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) override {
    cuda::swiglu_backward<T>(s_, dinp, dout, inp, N, F);
    check_launches("swiglu_backward");
  }
  void add(T* out, const T* a, const T* b, int64_t n) override {
    cuda::add<T>(s_, out, a, b, n);
    check_launches("add");
  }
  void bias_add(T* out, const T* inp, const T* bias, int64_t N, int64_t C) override {
    cuda::bias_add<T>(s_, out, inp, bias, N, C);
    check_launches("bias_add");
  }
  void bias_backward(T* dbias, const T* dout, int64_t N, int64_t C) override {
    cuda::bias_backward<T>(s_, dbias, dout, N, C);
    check_launches("bias_backward");
  }
  void scale(T* out, const T* inp, T s, int64_t n) override {
    cuda::scale<T>(s_, out, inp, s, n);
    check_launches("scale");
  }
  void sum_blocks(T* out, const T* blocks, int64_t n, std::span<const int> order) override {
    if (order.empty() || n <= 0) return;
    Upload<int> o(m_, order);
    cuda::sum_blocks<T>(s_, out, blocks, n, o.p(), static_cast<int>(order.size()));
    check_launches("sum_blocks");
  }
  T mse_loss(const T* y, const T* target, int64_t n) override {
    return read_scalar<T>(m_, [&](T* r) {
      cuda::mse_loss<T>(s_, r, y, target, n);
      check_launches("mse_loss");
    });
  }
  void mse_loss_backward(T* dy, const T* y, const T* target, int64_t n) override {
    cuda::mse_loss_backward<T>(s_, dy, y, target, n);
    check_launches("mse_loss_backward");
  }
  void sgd_step(T* w, const T* g, int64_t n, T lr) override {
    cuda::sgd_step<T>(s_, w, g, n, lr);
    check_launches("sgd_step");
  }
  void row_softmax_forward(T* out, const T* in, int64_t rows, int64_t cols) override {
    cuda::row_softmax_forward<T>(s_, out, in, rows, cols);
    check_launches("row_softmax_forward");
  }
  void row_softmax_backward(T* din, const T* dout, const T* out, int64_t rows, int64_t cols) override {
    cuda::row_softmax_backward<T>(s_, din, dout, out, rows, cols);
    check_launches("row_softmax_backward");
  }
  void topk_select(int32_t* topk, T* weights, const T* probs, int64_t tokens, int64_t experts, int64_t k) override {
    if (k < 1 || k > experts || experts > exact::kMaxExperts)
      throw std::invalid_argument("moe top-k: k = " + std::to_string(k) + " must be in [1, " +
                                  std::to_string(experts) + "] and experts at most " +
                                  std::to_string(exact::kMaxExperts));
    cuda::topk_select<T>(s_, topk, weights, probs, tokens, experts, k);
    check_launches("topk_select");
  }
  T aux_loss(const T* probs, const int32_t* topk, int64_t tokens, int64_t experts, int64_t k,
             double coeff) override {
    return read_scalar<T>(m_, [&](T* r) {
      cuda::aux_loss<T>(s_, r, probs, topk, tokens, experts, k, coeff);
      check_launches("aux_loss");
    });
  }
  void topk_scatter(T* dprobs, const int32_t* topk, const T* dweights, int64_t tokens, int64_t experts,
                    int64_t k) override {
    cuda::topk_scatter<T>(s_, dprobs, topk, dweights, tokens, experts, k);
    check_launches("topk_scatter");
  }
  void moe_combine(T* out, const T* weights, const T* expert_out, std::span<const int64_t> position, const T* shared,
                   int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    Upload<int64_t> pos(m_, position);
    cuda::moe_combine<T>(s_, out, weights, expert_out, pos.p(), shared, tokens, K, h);
    check_launches("moe_combine");
  }
  void moe_combine_backward(T* dexpert, T* dweights, const T* dout, const T* weights, const T* expert_out,
                            std::span<const int64_t> position, int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    Upload<int64_t> pos(m_, position);
    cuda::moe_combine_backward<T>(s_, dexpert, dweights, dout, weights, expert_out, pos.p(), tokens, K, h);
    check_launches("moe_combine_backward");
  }
  void moe_input_grad(T* dx, const T* dsent, std::span<const int64_t> position, const T* drouter, const T* dshared,
                      int64_t tokens, int64_t K, int64_t h) override {
    check_positions(position, tokens, K);
    Upload<int64_t> pos(m_, position);
    cuda::moe_input_grad<T>(s_, dx, dsent, pos.p(), drouter, dshared, tokens, K, h);
    check_launches("moe_input_grad");
  }
  void causal_conv_silu_forward(T* out, const T* inp, const T* weight, int64_t B, int64_t H, int64_t S, int64_t D,
                                int64_t K) override {
    cuda::causal_conv_silu_forward<T>(s_, out, inp, weight, B, H, S, D, K);
    check_launches("causal_conv_silu_forward");
  }
  void causal_conv_silu_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t B,
                                 int64_t H, int64_t S, int64_t D, int64_t K) override {
    cuda::causal_conv_silu_backward<T>(s_, dinp, dweight, dout, inp, weight, B, H, S, D, K);
    check_launches("causal_conv_silu_backward");
  }
  void gated_delta_rule_forward(T* out, const T* q, const T* k, const T* v, const T* a, const T* b, const T* A_log,
                                const T* dt_bias, int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk,
                                int64_t Dv) override {
    const exact::GdnDims n{B, Hk, Hv, S, Dk, Dv};
    const int64_t bytes = B * Hv * exact::gdn_forward_scratch<T>(n) * static_cast<int64_t>(sizeof(T));
    std::byte* scratch = m_.allocate(Domain::device, bytes);
    cuda::gated_delta_rule_forward<T>(s_, out, reinterpret_cast<T*>(scratch), q, k, v, a, b, A_log, dt_bias, B, Hk, Hv,
                                      S, Dk, Dv);
    m_.deallocate(Domain::device, scratch, bytes);
    check_launches("gated_delta_rule_forward");
  }
  void gated_delta_rule_backward(T* dq, T* dk, T* dv, T* da, T* db, T* dA_log, T* ddt_bias, const T* dout, const T* q,
                                 const T* k, const T* v, const T* a, const T* b, const T* A_log, const T* dt_bias,
                                 int64_t B, int64_t Hk, int64_t Hv, int64_t S, int64_t Dk, int64_t Dv) override {
    const exact::GdnDims n{B, Hk, Hv, S, Dk, Dv};
    const int64_t elems = B * Hv * (exact::gdn_backward_scratch<T>(n) + 2 * S * Dk + S);
    const int64_t bytes = elems * static_cast<int64_t>(sizeof(T));
    std::byte* scratch = m_.allocate(Domain::device, bytes);
    cuda::gated_delta_rule_backward<T>(s_, dq, dk, dv, da, db, dA_log, ddt_bias, reinterpret_cast<T*>(scratch), dout,
                                       q, k, v, a, b, A_log, dt_bias, B, Hk, Hv, S, Dk, Dv);
    m_.deallocate(Domain::device, scratch, bytes);
    check_launches("gated_delta_rule_backward");
  }
  void gated_rmsnorm_forward(T* out, const T* x, const T* z, const T* weight, int64_t N, int64_t D,
                             double eps) override {
    cuda::gated_rmsnorm_forward<T>(s_, out, x, z, weight, N, D, eps);
    check_launches("gated_rmsnorm_forward");
  }
  void gated_rmsnorm_backward(T* dx, T* dz, T* dweight, const T* dout, const T* x, const T* z, const T* weight,
                              int64_t N, int64_t D, double eps) override {
    cuda::gated_rmsnorm_backward<T>(s_, dx, dz, dweight, dout, x, z, weight, N, D, eps);
    check_launches("gated_rmsnorm_backward");
  }

 private:
  static void check_positions(std::span<const int64_t> position, int64_t tokens, int64_t K) {
    RCTS_CHECK(static_cast<int64_t>(position.size()) == tokens * K,
               "moe combine: " + std::to_string(position.size()) + " positions for " + std::to_string(tokens) +
                   " tokens x top-" + std::to_string(K));
  }
  cudaStream_t s_;
  MemoryResource& m_;
  LtGemm* lt_;
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

// RCTS_CUDA_THREADS_PER_BLOCK=N asks every launch for N threads per block (results do not
// depend on it; scripts/gpu-check reruns the equivalence tests at 1024, where the
// register-heavy kernels must get fewer). A value set_threads_per_block refuses is an error.
void threads_per_block_from_env() {
  const char* v = std::getenv("RCTS_CUDA_THREADS_PER_BLOCK");
  if (!v || !*v) return;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 32 || n > 1024 || !set_threads_per_block(static_cast<int>(n)))
    throw Error(std::string("RCTS_CUDA_THREADS_PER_BLOCK=") + v + ": a multiple of 32 in [32, 1024] expected");
}

// The device this process uses: the launcher's local rank (one GPU per rank), else 0.
int device_for_this_process() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "LOCAL_RANK"})
    if (const char* s = std::getenv(v)) return std::atoi(s);
  return 0;
}

class CudaBackend final : public Backend {
 public:
  // cudnn: the fast tier with cuDNN's fused attention (cudnn_attention.hpp).
  CudaBackend(bool fast, bool cudnn) : fast_(fast || cudnn), cudnn_(cudnn), device_(device_for_this_process()) {
    threads_per_block_from_env();
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    RCTS_CHECK(device_ < count, "this process's local rank asks for CUDA device " + std::to_string(device_) +
                                    " but there are " + std::to_string(count) + " (one GPU per rank)");
    check(cudaSetDevice(device_), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    memory_ = std::make_unique<CudaMemory>(stream_, device_);
    if (fast_) lt_ = std::make_unique<LtGemm>();
#ifdef RCTS_HAVE_CUDNN
    if (cudnn_) attention_ = make_cudnn_attention(stream_);
#endif
    f32_ = std::make_unique<CudaOps<float>>(stream_, *memory_, lt_.get());
    f64_ = std::make_unique<CudaOps<double>>(stream_, *memory_, nullptr);
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device_), "cudaGetDeviceProperties");
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    device_text_ = std::string(prop.name) + " (device " + std::to_string(device_) + ", sm_" +
                   std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                   std::to_string(prop.multiProcessorCount) + " SMs), runtime " + std::to_string(runtime) +
                   ", driver " + std::to_string(driver);
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(stream_);
#ifdef RCTS_HAVE_CUDNN
    attention_.reset();
#endif
    lt_.reset();
    f32_.reset();
    f64_.reset();
    memory_.reset();
    cudaStreamDestroy(stream_);
  }
  std::string name() const override { return cudnn_ ? "cuda-cudnn" : fast_ ? "cuda-fast" : "cuda"; }
  // The exact tier reproduces the CPU's goldens; the fast tiers' bits are their own.
  std::string golden_name() const override { return fast_ ? name() : "cpu"; }
  bool has_goldens() const override { return !fast_; }
  std::string description() const override {
    std::string fused;
#ifdef RCTS_HAVE_CUDNN
    if (attention_) fused = ", fused attention by " + attention_->describe();
#endif
    return (fast_ ? "CUDA fast tier (" + lt_->describe() + fused + ", exact kernels elsewhere) on "
                  : std::string("CUDA exact tier on ")) +
           device_text_;
  }
  Ops<float>& f32() override { return *f32_; }
  Ops<double>& f64() override { return *f64_; }
  MemoryResource& memory() override { return *memory_; }
  // cuBLASLt's workspace, then (cuda-cudnn) cuDNN's.
  int64_t op_workspace_bytes() const override {
    return (fast_ ? static_cast<int64_t>(LtGemm::kWorkspaceBytes) : 0) + attention_workspace_bytes();
  }
  void bind_op_workspace(std::byte* p, int64_t bytes) override {
    const auto lt_bytes = static_cast<int64_t>(LtGemm::kWorkspaceBytes);
    if (lt_) lt_->bind_workspace(p, static_cast<size_t>(bytes - attention_workspace_bytes()));
#ifdef RCTS_HAVE_CUDNN
    if (attention_) attention_->bind_workspace(p + lt_bytes, bytes - lt_bytes);
#else
    (void)lt_bytes;
#endif
  }
  FusedAttention* fused_attention() override {
#ifdef RCTS_HAVE_CUDNN
    return attention_.get();
#else
    return nullptr;
#endif
  }
  std::optional<int64_t> device_pool_high_water() const override { return memory_->pool_high_water(); }
  void reset_device_pool_high_water() override { memory_->reset_pool_high_water(); }
  std::unique_ptr<Communicator> make_world(Communicator& host_world) override {
#ifdef RCTS_HAVE_NCCL
    return NcclCommunicator::world(host_world, stream_);
#else
    (void)host_world;
    throw Error("backend '" + name() + "' was built without NCCL: multi-rank runs need it (set RCTS_NCCL_ROOT)");
#endif
  }

  void convert(void* dst, DType dst_type, const void* src, DType src_type, int64_t n) override {
    if (n <= 0) return;
    cuda::convert(stream_, dst, elem_of(dst_type), src, elem_of(src_type), n);
    check_launches("convert");
  }
  void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    check_elem(elem_bytes);
    cuda::tokens_to_heads(stream_, heads, tok, elem_bytes, width, col0, s, b, a, d);
    check_launches("tokens_to_heads");
  }
  void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t s,
                       int64_t b, int64_t a, int64_t d) override {
    check_elem(elem_bytes);
    cuda::heads_to_tokens(stream_, tok, heads, elem_bytes, width, col0, s, b, a, d);
    check_launches("heads_to_tokens");
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
    check_launches("gather_rows");
  }
  void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) override {
    check_dropout_p(p);
    if (n <= 0) return;
    cuda::dropout_mask(stream_, mask, n, p, seed, offset);
    check_launches("dropout_mask");
  }
  // Real copy streams and events (design §9); the link model has no meaning on a GPU:
  // the copies take what the link takes.
  std::unique_ptr<CopyStream> make_copy_stream(const std::string& name, LinkModel) override {
    return std::make_unique<CudaCopyStream>(name, stream_);
  }

 private:
  static void check_elem(int bytes) {
    if (bytes != 2 && bytes != 4 && bytes != 8)
      throw std::invalid_argument("head permute: unsupported element size " + std::to_string(bytes));
  }
  int64_t attention_workspace_bytes() const {
#ifdef RCTS_HAVE_CUDNN
    return cudnn_ ? CudnnAttention::kWorkspaceBytes : 0;
#else
    return 0;
#endif
  }
  bool fast_;
  bool cudnn_;
  int device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CudaMemory> memory_;
  std::unique_ptr<LtGemm> lt_;
#ifdef RCTS_HAVE_CUDNN
  std::unique_ptr<CudnnAttention> attention_;
#endif
  std::unique_ptr<CudaOps<float>> f32_;
  std::unique_ptr<CudaOps<double>> f64_;
  std::string device_text_;
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

std::unique_ptr<Backend> make_cuda_backend(bool fast) {
  if (const std::string why = unavailable_reason(); !why.empty())
    throw Error(std::string("backend '") + (fast ? "cuda-fast" : "cuda") + "' cannot run here: " + why);
  return std::make_unique<CudaBackend>(fast, false);
}

std::string cudnn_unavailable_reason() {
#ifdef RCTS_HAVE_CUDNN
  return unavailable_reason();
#else
  return "not built: " RCTS_CUDNN_MISSING;
#endif
}

std::unique_ptr<Backend> make_cuda_cudnn_backend() {
  if (const std::string why = cudnn_unavailable_reason(); !why.empty())
    throw Error("backend 'cuda-cudnn' cannot run here: " + why);
  return std::make_unique<CudaBackend>(true, true);
}

}  // namespace rcts::cuda
