// cuda-cudnn (label cuda): the host rules run everywhere nvcc is (the refusals, the
// registration, the reason it cannot start without a device); the device tests skip
// with the reason without a GPU and, on one, hold cuDNN's SDPA to what the recompute
// checks rely on: the same (seed, offset) gives the same bits, forward and backward, and
// another offset another mask; without dropout it is the CPU's attention to within
// bf16 rounding (causal, scale 1/sqrt(d), row statistics as rcts keeps them).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/sdpa_limits.hpp"
#include "backends/registry.hpp"
#include "kernels/common/bf16.hpp"
#include "reference/core/error.hpp"

namespace rcts {
namespace {

const FusedAttentionShape kShape{2, 4, 16, 16, 16};

std::string refusal(DType t, FusedAttentionShape sh, double p = 0.1) { return cuda::sdpa_refusal(t, sh, p); }

TEST(CudnnSdpaLimits, TakesTheRctsDenseShapesInBf16) {
  EXPECT_EQ(refusal(DType::bf16, kShape), "");
  EXPECT_EQ(refusal(DType::bf16, {1, 1, 1, 128, 128}, 0.0), "");
}

TEST(CudnnSdpaLimits, RefusalsNameTheValue) {
  EXPECT_NE(refusal(DType::f32, kShape).find("model.activation_dtype is f32"), std::string::npos);
  EXPECT_NE(refusal(DType::f64, kShape).find("f64"), std::string::npos);
  EXPECT_NE(refusal(DType::bf16, {2, 4, 16, 12, 12}).find("head dim 12 (hidden_size / num_attention_heads) is not a "
                                                         "multiple of 8"),
            std::string::npos);
  EXPECT_NE(refusal(DType::bf16, {2, 4, 16, 136, 136}).find("head dim 136 (hidden_size / num_attention_heads) exceeds "
                                                          "128"),
            std::string::npos);
  EXPECT_NE(refusal(DType::bf16, {2, 4, 16, 24, 16}).find("v head dim 16 differs"), std::string::npos);
  EXPECT_NE(refusal(DType::bf16, {2, 4, 0, 16, 16}).find("s 0"), std::string::npos);
  EXPECT_NE(refusal(DType::bf16, kShape, 1.0).find("model.attention_dropout = 1"), std::string::npos);
  EXPECT_NE(refusal(DType::bf16, kShape, -0.5).find("outside [0, 1)"), std::string::npos);
}

TEST(CudaCudnnBackend, IsRegisteredWithItsOwnGoldenNameAndNoGoldens) {
  const BackendEntry* e = find_backend("cuda-cudnn");
  ASSERT_NE(e, nullptr) << backend_names();
  EXPECT_EQ(e->golden_name, "cuda-cudnn");
  EXPECT_NE(e->description.find("cuDNN"), std::string::npos);
}

TEST(CudaCudnnBackend, StartsWithAFusedAttentionOrSaysWhyNot) {
  const BackendEntry* e = find_backend("cuda-cudnn");
  ASSERT_NE(e, nullptr);
  const std::string why = e->unavailable();
  if (why.empty()) {  // a device and a build with cuDNN: it must start (no skip on a GPU)
    std::unique_ptr<Backend> b = make_backend("cuda-cudnn");
    EXPECT_EQ(b->name(), "cuda-cudnn");
    EXPECT_FALSE(b->has_goldens());
    EXPECT_NE(b->fused_attention(), nullptr);
    EXPECT_NE(b->description().find("cuDNN"), std::string::npos) << b->description();
    return;
  }
  EXPECT_TRUE(why.find("no CUDA device") != std::string::npos || why.find("not built") != std::string::npos) << why;
  try {
    make_backend("cuda-cudnn");
    FAIL() << "cuda-cudnn started without a device";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
  }
}

// --- on a device

struct Dev {
  void* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t bytes) : n(bytes) { EXPECT_EQ(cudaMalloc(&p, bytes), cudaSuccess); }
  ~Dev() { cudaFree(p); }
  template <typename T> void put(const std::vector<T>& v) {
    ASSERT_EQ(cudaMemcpy(p, v.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
  }
  template <typename T> std::vector<T> get() const {
    std::vector<T> v(n / sizeof(T));
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(v.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }
};

class CudnnOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = cuda::cudnn_unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
    backend_ = cuda::make_cuda_cudnn_backend();
    fa_ = backend_->fused_attention();
    ASSERT_NE(fa_, nullptr);
    bytes_ = backend_->op_workspace_bytes();
    ASSERT_EQ(cudaMalloc(&workspace_, static_cast<size_t>(bytes_)), cudaSuccess);
    backend_->bind_op_workspace(static_cast<std::byte*>(workspace_), bytes_);
    const int64_t n = kShape.b * kShape.a * kShape.s * kShape.d;
    for (auto* v : {&q_, &k_, &v_, &do_}) {
      v->resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        (*v)[static_cast<size_t>(i)] = to_bf16(static_cast<float>(std::sin(0.37 * static_cast<double>(i) +
                                                                             static_cast<double>(v == &k_) +
                                                                             2.0 * static_cast<double>(v == &v_))));
    }
  }
  void TearDown() override {
    backend_.reset();
    cudaFree(workspace_);
  }
  // out, stats, dq, dk, dv bytes of one forward + backward at (p, offset).
  std::vector<std::vector<uint16_t>> run(double p, uint64_t offset) {
    const size_t n = q_.size() * 2, ns = static_cast<size_t>(kShape.b * kShape.a * kShape.s) * 4;
    Dev q(n), k(n), v(n), o(n), st(ns), dO(n), dq(n), dk(n), dv(n);
    q.put(q_), k.put(k_), v.put(v_), dO.put(do_);
    const double scale = 1.0 / std::sqrt(16.0);
    fa_->forward(o.p, static_cast<float*>(st.p), q.p, k.p, v.p, DType::bf16, kShape, scale, p, 1234, offset);
    fa_->backward(dq.p, dk.p, dv.p, dO.p, q.p, k.p, v.p, o.p, static_cast<const float*>(st.p), DType::bf16, kShape,
                  scale, p, 1234, offset);
    return {o.get<uint16_t>(), st.get<uint16_t>(), dq.get<uint16_t>(), dk.get<uint16_t>(), dv.get<uint16_t>()};
  }
  std::unique_ptr<Backend> backend_;
  FusedAttention* fa_ = nullptr;
  void* workspace_ = nullptr;
  int64_t bytes_ = 0;
  std::vector<bf16> q_, k_, v_, do_;
};

TEST_F(CudnnOnDevice, TheSameSeedAndOffsetGiveTheSameBits) {
  const auto a = run(0.1, 40), b = run(0.1, 40);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "tensor " << i << " (out, stats, dq, dk, dv)";
}

TEST_F(CudnnOnDevice, AnotherOffsetDrawsAnotherMask) {
  EXPECT_NE(run(0.1, 40)[0], run(0.1, 41 + 4096)[0]);
}

TEST_F(CudnnOnDevice, WithoutDropoutItIsTheCausalAttention) {
  const auto r = run(0.0, 0);
  const int64_t s = kShape.s, d = kShape.d;
  double worst = 0;
  for (int64_t h = 0; h < kShape.b * kShape.a; ++h)
    for (int64_t i = 0; i < s; ++i) {
      std::vector<double> x(static_cast<size_t>(i + 1));
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c)
          dot += from_bf16(q_[static_cast<size_t>((h * s + i) * d + c)]) * from_bf16(k_[static_cast<size_t>((h * s + j) * d + c)]);
        m = std::max(m, x[static_cast<size_t>(j)] = dot / 4.0);
      }
      for (double e : x) sum += std::exp(e - m);
      for (int64_t c = 0; c < d; ++c) {
        double o = 0;
        for (int64_t j = 0; j <= i; ++j)
          o += std::exp(x[static_cast<size_t>(j)] - m) / sum * from_bf16(v_[static_cast<size_t>((h * s + j) * d + c)]);
        bf16 got;  // out is in token layout (s, b, a·d)
        got.bits = r[0][static_cast<size_t>((i * kShape.b + h / kShape.a) * kShape.a * d + (h % kShape.a) * d + c)];
        worst = std::max(worst, std::abs(from_bf16(got) - o));
      }
    }
  EXPECT_LT(worst, 2e-2) << "cuDNN's causal attention differs from the definition by " << worst;
}

}  // namespace
}  // namespace rcts
