// Device-side exactness of the CUDA exact tier (label cuda; run by scripts/gpu-check):
// Philox blocks device vs host for 2^24 (seed, block) pairs, blocks near 2^32 and 2^62
// included; dropout masks and ops equal to the CPU under three launch shapes; detmath
// over every float subnormal and dense sweeps (float and double); bf16 rounding of every
// float bit pattern. Without a CUDA device every test skips with the reason (never a
// pass without running).
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.hpp"
#include "backends/cuda/launch.hpp"
#include "backends/registry.hpp"
#include "kernels/common/bf16.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/common/philox.hpp"
#include "tests/cuda/device_kernels.hpp"

namespace rcts {
namespace {

#define SKIP_WITHOUT_DEVICE()                                                   \
  do {                                                                          \
    if (const std::string why = cuda::unavailable_reason(); !why.empty())       \
      GTEST_SKIP() << why;                                                      \
  } while (0)

// Device memory for one test. The backend's work runs on its own non-blocking stream,
// which the legacy default stream of a plain cudaMemcpy does not wait for (nor the
// other way round: a pageable upload may still be in flight when cudaMemcpy returns).
// So every copy waits for the whole device before and after: an upload has landed
// before any kernel may read it, and host() reads only after every kernel wrote.
template <typename T> class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) { EXPECT_EQ(cudaMalloc(&p_, bytes()), cudaSuccess); }
  DeviceArray(const std::vector<T>& v) : DeviceArray(v.size()) {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~DeviceArray() {
    cudaDeviceSynchronize();  // no kernel on any stream may still use it
    cudaFree(p_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* p() { return p_; }
  std::vector<T> host() const {
    std::vector<T> v(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

 private:
  size_t bytes() const { return n_ * sizeof(T) + 1; }
  size_t n_;
  T* p_ = nullptr;
};

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

TEST(CudaExactness, PhiloxBlocksEqualTheHostFor2To24Pairs) {
  SKIP_WITHOUT_DEVICE();
  const int64_t chunk = int64_t{1} << 20;
  uint64_t rng = 42;
  for (int c = 0; c < 16; ++c) {
    std::vector<uint64_t> seeds(chunk), blocks(chunk);
    for (int64_t i = 0; i < chunk; ++i) {
      seeds[i] = c % 4 == 0 ? static_cast<uint64_t>(c) : splitmix(rng);
      // Counter words roll over: blocks near 2^32 and 2^62 (and 2^64), and random ones.
      const uint64_t base = c % 4 == 1 ? (uint64_t{1} << 32) - chunk / 2
                            : c % 4 == 2 ? (uint64_t{1} << 62) - chunk / 2
                            : c % 4 == 3 ? ~uint64_t{0} - chunk
                                         : splitmix(rng);
      blocks[i] = c % 4 == 0 ? splitmix(rng) : base + static_cast<uint64_t>(i);
    }
    DeviceArray<uint64_t> ds(seeds), db(blocks);
    DeviceArray<uint32_t> out(static_cast<size_t>(4 * chunk));
    cuda_test::philox_blocks(out.p(), ds.p(), db.p(), chunk);
    ASSERT_STREQ(cuda_test::synchronize(), "");
    const auto words = out.host();
    for (int64_t i = 0; i < chunk; ++i) {
      const philox::Counter want = philox::block(seeds[i], blocks[i]);
      for (int w = 0; w < 4; ++w)
        ASSERT_EQ(words[4 * i + w], want[w]) << "seed " << seeds[i] << " block " << blocks[i] << " word " << w;
    }
  }
}

TEST(CudaExactness, MasksAndOpsDoNotDependOnTheLaunchShape) {
  SKIP_WITHOUT_DEVICE();
  auto cpu = make_backend("cpu");
  auto gpu = make_backend("cuda");
  const int64_t n = 1000003;
  std::vector<uint8_t> want(n);
  cpu->dropout_mask(want.data(), n, 0.1, 1234, (uint64_t{1} << 32) - 7);
  std::vector<float> a(257 * 300), b(300 * 33), c_want(257 * 33);
  uint64_t rng = 7;
  for (auto& x : a) x = static_cast<float>(static_cast<int64_t>(splitmix(rng) % 2001) - 1000) / 997.0f;
  for (auto& x : b) x = static_cast<float>(static_cast<int64_t>(splitmix(rng) % 2001) - 1000) / 991.0f;
  cpu->f32().gemm(Trans::N, Trans::N, 257, 33, 300, a.data(), 300, b.data(), 33, c_want.data(), 33, false);
  for (int threads : {32, 256, 1024}) {
    ASSERT_TRUE(cuda::set_threads_per_block(threads));
    DeviceArray<uint8_t> mask(n);
    gpu->dropout_mask(mask.p(), n, 0.1, 1234, (uint64_t{1} << 32) - 7);
    EXPECT_EQ(mask.host(), want) << threads << " threads per block";
    DeviceArray<float> da(a), dbb(b), dc(c_want.size());
    gpu->f32().gemm(Trans::N, Trans::N, 257, 33, 300, da.p(), 300, dbb.p(), 33, dc.p(), 33, false);
    const auto got = dc.host();
    EXPECT_EQ(std::memcmp(got.data(), c_want.data(), c_want.size() * sizeof(float)), 0) << threads << " threads";
  }
  cuda::set_threads_per_block(256);
}

template <typename T> bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

template <typename T> void check_detmath(const std::vector<T>& in, const std::vector<T>& out, const char* what) {
  int bad = 0;
  for (size_t i = 0; i < in.size() && bad < 5; ++i) {
    const T x = in[i];
    const T want[6] = {detmath::exp(x), detmath::expm1(x), detmath::log(x),
                       detmath::tanh(x), detmath::erf(x),   detmath::sigmoid(x)};
    for (int f = 0; f < 6; ++f)
      if (!same_bits(out[6 * i + f], want[f]) && !(want[f] != want[f] && out[6 * i + f] != out[6 * i + f])) {
        ADD_FAILURE() << what << " function " << f << " of " << x << ": device " << out[6 * i + f] << ", host "
                      << want[f];
        ++bad;
      }
  }
}

TEST(CudaExactness, DetmathEqualsTheHostOnEverySubnormalAndDenseSweeps) {
  SKIP_WITHOUT_DEVICE();
  // Every float subnormal (both signs), then every 256th float bit pattern.
  std::vector<float> f;
  for (uint32_t u = 1; u < 0x00800000u; ++u) {
    f.push_back(bits_float(u));
    f.push_back(bits_float(u | 0x80000000u));
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 256) f.push_back(bits_float(static_cast<uint32_t>(u)));
  const size_t chunk = size_t{1} << 22;
  for (size_t begin = 0; begin < f.size(); begin += chunk) {
    const std::vector<float> in(f.begin() + static_cast<std::ptrdiff_t>(begin),
                                f.begin() + static_cast<std::ptrdiff_t>(std::min(f.size(), begin + chunk)));
    DeviceArray<float> din(in), dout(6 * in.size());
    cuda_test::detmath_float(dout.p(), din.p(), static_cast<int64_t>(in.size()));
    ASSERT_STREQ(cuda_test::synchronize(), "");
    check_detmath(in, dout.host(), "float");
  }
  // Doubles: random bit patterns and the subnormal range's edges.
  std::vector<double> d;
  uint64_t rng = 99;
  for (int i = 0; i < (1 << 22); ++i) {
    double x;
    const uint64_t u = splitmix(rng);
    std::memcpy(&x, &u, sizeof x);
    d.push_back(x);
  }
  for (uint64_t u = 1; u < 4096; ++u) {
    double x;
    std::memcpy(&x, &u, sizeof x);
    d.push_back(x);
    d.push_back(-x);
  }
  DeviceArray<double> din(d), dout(6 * d.size());
  cuda_test::detmath_double(dout.p(), din.p(), static_cast<int64_t>(d.size()));
  ASSERT_STREQ(cuda_test::synchronize(), "");
  check_detmath(d, dout.host(), "double");
}

TEST(CudaExactness, Bf16RoundingOfEveryFloat) {
  SKIP_WITHOUT_DEVICE();
  const int64_t chunk = int64_t{1} << 26;
  DeviceArray<uint16_t> out(static_cast<size_t>(chunk));
  for (uint64_t first = 0; first < (uint64_t{1} << 32); first += static_cast<uint64_t>(chunk)) {
    cuda_test::bf16_of_bits(out.p(), static_cast<uint32_t>(first), chunk);
    ASSERT_STREQ(cuda_test::synchronize(), "");
    const auto got = out.host();
    for (int64_t i = 0; i < chunk; ++i) {
      const uint32_t u = static_cast<uint32_t>(first) + static_cast<uint32_t>(i);
      ASSERT_EQ(got[static_cast<size_t>(i)], to_bf16(bits_float(u)).bits) << "float bits " << std::hex << u;
    }
  }
}

}  // namespace
}  // namespace rcts
