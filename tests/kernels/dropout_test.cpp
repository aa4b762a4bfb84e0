// Dropout kernels: the mask is exactly the shared rule (scalar loop over
// dropout_rule::keep), independent of threads, with the block layout of the rule;
// keep-rate statistics; p = 0 identity; p = 1 zeros; forward/backward values.
#include "kernels/cpu/dropout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/common/dropout_rule.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

std::vector<uint8_t> make_mask(int64_t n, double p, uint64_t seed, uint64_t offset) {
  std::vector<uint8_t> m(static_cast<size_t>(n), 7);
  dropout_mask(m.data(), n, p, seed, offset);
  return m;
}

TEST(CpuDropout, MaskEqualsScalarRule) {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 1001, 40003}) {
    for (double p : {0.1, 0.5, 0.9}) {
      const uint64_t seed = 0x1234567890abcdefull, offset = 977;
      const auto m = make_mask(n, p, seed, offset);
      const uint32_t thr = dropout_rule::threshold(p);
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) bad += m[i] != dropout_rule::keep(seed, offset, i, thr);
      EXPECT_EQ(bad, 0) << "n=" << n << " p=" << p;
    }
  }
}

TEST(CpuDropout, MaskIsBlockLayoutOfTheRule) {
  // Element i uses block offset + i/4: starting one block later shifts the mask by 4.
  const int64_t n = 4000;
  const auto a = make_mask(n + 4, 0.3, 42, 10);
  const auto b = make_mask(n, 0.3, 42, 11);
  EXPECT_TRUE(std::equal(b.begin(), b.end(), a.begin() + 4));
  // Different seeds or non-aligned offsets give different masks.
  EXPECT_NE(make_mask(n, 0.3, 43, 10), make_mask(n, 0.3, 42, 10));
  EXPECT_NE(make_mask(n, 0.3, 42, 12), make_mask(n, 0.3, 42, 10));
}

TEST(CpuDropout, MaskIndependentOfThreadCount) {
  const int64_t n = (1 << 18) + 3;  // ragged last block
  test::expect_thread_independent([&] { return test::to_bytes(make_mask(n, 0.1, 7, 123456789)); }, "mask");
  test::expect_thread_independent(
      [&] {
        const auto m = make_mask(n, 0.25, 8, 0);
        test::Rng rng(3);
        const auto x = rng.vec<float>(static_cast<size_t>(n));
        std::vector<float> y(x.size()), dx(x.size());
        dropout_forward(y.data(), x.data(), m.data(), n, 0.25);
        dropout_backward(dx.data(), x.data(), m.data(), n, 0.25);
        return test::to_bytes(m, y, dx);
      },
      "dropout apply");
}

TEST(CpuDropout, KeepRateNearOneMinusP) {
  const int64_t n = 1 << 20;
  for (double p : {0.05, 0.1, 0.5, 0.9}) {
    const auto m = make_mask(n, p, 2024, 5);
    int64_t kept = 0;
    for (auto v : m) {
      ASSERT_TRUE(v == 0 || v == 1);
      kept += v;
    }
    const double rate = static_cast<double>(kept) / static_cast<double>(n);
    const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(rate, 1.0 - p, 6 * sigma) << "p=" << p;
  }
}

TEST(CpuDropout, PZeroIsIdentityAndPOneDropsAll) {
  const int64_t n = 1003;
  const auto ones = make_mask(n, 0.0, 1, 2);
  for (auto v : ones) ASSERT_EQ(v, 1);
  test::Rng rng(5);
  auto x = rng.vec<double>(n);
  x[0] = -0.0;
  std::vector<double> y(n), dx(n);
  dropout_forward(y.data(), x.data(), ones.data(), n, 0.0);
  dropout_backward(dx.data(), x.data(), ones.data(), n, 0.0);
  EXPECT_TRUE(test::same_bits(y, x));
  EXPECT_TRUE(test::same_bits(dx, x));

  const auto zeros = make_mask(n, 1.0, 1, 2);
  for (auto v : zeros) ASSERT_EQ(v, 0);
  dropout_forward(y.data(), x.data(), zeros.data(), n, 1.0);
  for (auto v : y) ASSERT_EQ(v, 0.0);
}

TEST(CpuDropout, ForwardAndBackwardValues) {
  const int64_t n = 5000;
  const double p = 0.1;
  const auto m = make_mask(n, p, 77, 3);
  test::Rng rng(6);
  const auto x = rng.vec<float>(n), dy = rng.vec<float>(n);
  std::vector<float> y(n), dx(n);
  dropout_forward(y.data(), x.data(), m.data(), n, p);
  dropout_backward(dx.data(), dy.data(), m.data(), n, p);
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  // Bitwise: a dropped negative element is -0 (x * 0), as torch's x * mask * scale gives.
  std::vector<float> want_y(n), want_dx(n);
  for (int64_t i = 0; i < n; ++i) {
    want_y[i] = (x[i] * static_cast<float>(m[i])) * scale;
    want_dx[i] = (dy[i] * static_cast<float>(m[i])) * scale;
  }
  EXPECT_TRUE(test::same_bits(y, want_y));
  EXPECT_TRUE(test::same_bits(dx, want_dx));
  int64_t neg_zero = 0;
  for (int64_t i = 0; i < n; ++i) neg_zero += !m[i] && x[i] < 0 && std::signbit(y[i]);
  EXPECT_GT(neg_zero, 0);
  // In place.
  std::vector<float> z = x;
  dropout_forward(z.data(), z.data(), m.data(), n, p);
  EXPECT_TRUE(test::same_bits(z, y));
}

TEST(CpuDropout, RejectsBadProbability) {
  std::vector<uint8_t> m(4);
  std::vector<float> x(4), y(4);
  EXPECT_THROW(dropout_mask(m.data(), 4, -0.1, 1, 0), std::invalid_argument);
  EXPECT_THROW(dropout_mask(m.data(), 4, 1.5, 1, 0), std::invalid_argument);
  EXPECT_THROW(dropout_forward(y.data(), x.data(), m.data(), 4, std::nan("")), std::invalid_argument);
}

}  // namespace
}  // namespace rcts::cpu
