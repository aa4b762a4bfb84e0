// Element-wise kernels: exact results, bias gradient order and accumulation, and bf16
// rounding edge cases (ties to even, NaN, inf, overflow of the largest finite float).
#include "kernels/cpu/elementwise.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/bf16.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

using test::Rng;

TEST(CpuElementwise, AddScaleCopy) {
  const int64_t n = 70001;  // above the parallel threshold
  Rng rng(1);
  const auto a = rng.vec<double>(n), b = rng.vec<double>(n);
  std::vector<double> out(n), c = a, s(n), cp(n);
  add(out.data(), a.data(), b.data(), n);
  add_inplace(c.data(), b.data(), n);
  scale(s.data(), a.data(), 0.3, n);
  copy(cp.data(), a.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(out[i], a[i] + b[i]);
    ASSERT_EQ(c[i], a[i] + b[i]);
    ASSERT_EQ(s[i], a[i] * 0.3);
  }
  EXPECT_TRUE(test::same_bits(cp, a));
  scale(c.data(), c.data(), 2.0, n);  // in place
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], out[i] * 2.0);
}

TEST(CpuElementwise, BiasAddAndBackward) {
  const int64_t N = 9, C = 130;  // three column blocks, the last one ragged
  Rng rng(2);
  const auto x = rng.vec<float>(N * C), bias = rng.vec<float>(C), dy = rng.vec<float>(N * C);
  std::vector<float> y(N * C);
  bias_add(y.data(), x.data(), bias.data(), N, C);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t c = 0; c < C; ++c) ASSERT_EQ(y[r * C + c], x[r * C + c] + bias[c]);
  std::vector<float> db(C, 1.5f);
  bias_backward(db.data(), dy.data(), N, C);
  for (int64_t c = 0; c < C; ++c) {
    float s = 0.0f;
    for (int64_t r = 0; r < N; ++r) s += dy[r * C + c];
    ASSERT_EQ(db[c], 1.5f + s) << c;  // summed from 0 in row order, then added once
  }
}

// The ordered rank sum: blocks added left to right in the given order. With 1e8 (ulp 8)
// and two 4s, (1e8 + 4) + 4 = 1e8 (ties to even twice) but (4 + 4) + 1e8 = 1e8 + 8.
TEST(CpuElementwise, SumBlocksAddsInTheGivenOrder) {
  const std::vector<float> blocks = {1e8f, 2.0f, 4.0f, -1.0f, 4.0f, 0.5f};  // 3 ranks x 2
  std::vector<float> out(2);
  const int rank_order[3] = {0, 1, 2};
  sum_blocks(out.data(), blocks.data(), 2, rank_order, 3);
  EXPECT_EQ(out[0], 1e8f);
  EXPECT_EQ(out[1], (2.0f + -1.0f) + 0.5f);
  const int rotated[3] = {1, 2, 0};
  sum_blocks(out.data(), blocks.data(), 2, rotated, 3);
  EXPECT_EQ(out[0], 1e8f + 8.0f);
  std::vector<double> one(2);
  const std::vector<double> single = {3.0, 4.0};
  const int first[1] = {0};
  sum_blocks(one.data(), single.data(), 2, first, 1);
  EXPECT_EQ(one, single);
}

TEST(CpuElementwise, BitsIndependentOfThreadCount) {
  const int64_t N = 300, C = 257;
  Rng rng(3);
  const auto x = rng.vec<float>(N * C), bias = rng.vec<float>(C);
  test::expect_thread_independent(
      [&] {
        std::vector<float> y(N * C), db(C, 0.0f), r = x;
        bias_add(y.data(), x.data(), bias.data(), N, C);
        bias_backward(db.data(), x.data(), N, C);
        round_to_bf16(r.data(), N * C);
        return test::to_bytes(y, db, r);
      },
      "elementwise float");
}

float from_bits(uint32_t u) { return bits_float(u); }

TEST(CpuRoundToBf16, EdgeCases) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {
      1.0f,
      from_bits(0x3f808000u),  // 1 + 2^-8: tie between 1 and 1 + 2^-7 -> even (1)
      from_bits(0x3f818000u),  // 1 + 3*2^-8: tie between odd 0x3f81 and even 0x3f82 -> 0x3f82
      from_bits(0x3f808001u),  // just above the tie -> up
      from_bits(0x3f807fffu),  // just below the tie -> down
      -from_bits(0x3f818000u), // negative tie -> even magnitude
      inf,
      -inf,
      std::numeric_limits<float>::quiet_NaN(),
      from_bits(0x7f800001u),  // signalling NaN -> stays NaN (quietened)
      std::numeric_limits<float>::max(),  // rounds past the largest bf16 -> inf
      from_bits(0x7f7f7fffu),  // below the overflow tie -> largest finite bf16
      from_bits(0x7f7f8000u),  // the overflow tie (odd 0x7f7f) -> inf
      -0.0f,
      from_bits(0x00000001u),  // smallest subnormal -> 0
      from_bits(0x00018000u),  // subnormal tie -> even (0x0002)
  };
  const std::vector<uint32_t> want = {0x3f800000u, 0x3f800000u, 0x3f820000u, 0x3f810000u, 0x3f800000u,
                                      0xbf820000u, 0x7f800000u, 0xff800000u, 0,           0,
                                      0x7f800000u, 0x7f7f0000u, 0x7f800000u, 0x80000000u, 0x00000000u,
                                      0x00020000u};
  round_to_bf16(x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    if (i == 8 || i == 9) {
      EXPECT_TRUE(std::isnan(x[i])) << i;
      EXPECT_EQ(float_bits(x[i]) & 0xffffu, 0u) << i;  // low half cleared: a bf16 value
      continue;
    }
    EXPECT_EQ(float_bits(x[i]), want[i]) << "case " << i;
  }
}

TEST(CpuRoundToBf16, IsIdempotentAndMatchesHeader) {
  Rng rng(4);
  auto x = rng.vec<float>(100000, -1e6, 1e6);
  auto y = x;
  round_to_bf16(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(float_bits(y[i]), float_bits(round_bf16(x[i])));
  auto z = y;
  round_to_bf16(z.data(), static_cast<int64_t>(z.size()));
  EXPECT_TRUE(test::same_bits(z, y));
}

}  // namespace
}  // namespace rcts::cpu
