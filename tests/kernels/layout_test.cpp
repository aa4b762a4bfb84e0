// Data movement kernels (kernels/cpu/layout.hpp): the head permutes against the index
// formula written out here, for every element size and a non-zero column offset; row
// gathers with range checks; dtype conversions, rounding included.
#include "kernels/cpu/layout.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "kernels/common/bf16.hpp"

namespace rcts::cpu {
namespace {

template <typename E> void check_permutes(int bytes) {
  const int64_t s = 3, b = 2, a = 2, d = 5, width = 3 * a * d, col0 = a * d;  // the k block of a fused QKV
  std::vector<E> tok(static_cast<size_t>(s * b * width));
  std::iota(tok.begin(), tok.end(), E(1));
  std::vector<E> heads(static_cast<size_t>(b * a * s * d));
  tokens_to_heads(heads.data(), tok.data(), bytes, width, col0, s, b, a, d);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ai = 0; ai < a; ++ai)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          ASSERT_EQ(heads[static_cast<size_t>(((bi * a + ai) * s + si) * d + di)],
                    tok[static_cast<size_t>((si * b + bi) * width + col0 + ai * d + di)]);
  std::vector<E> back(tok.size(), E(0));
  heads_to_tokens(back.data(), heads.data(), bytes, width, col0, s, b, a, d);
  for (int64_t t = 0; t < s * b; ++t)
    for (int64_t c = 0; c < width; ++c) {
      const E want = (c >= col0 && c < col0 + a * d) ? tok[static_cast<size_t>(t * width + c)] : E(0);
      ASSERT_EQ(back[static_cast<size_t>(t * width + c)], want) << "token " << t << " column " << c;
    }
}

TEST(CpuLayout, HeadPermutesFollowTheIndexFormulaForEveryElementSize) {
  check_permutes<uint16_t>(2);
  check_permutes<uint32_t>(4);
  check_permutes<uint64_t>(8);
  uint8_t x = 0;
  EXPECT_THROW(tokens_to_heads(&x, &x, 1, 1, 0, 1, 1, 1, 1), std::invalid_argument);
}

TEST(CpuLayout, GatherRowsCopiesRowsAndChecksTheirRange) {
  const std::vector<int32_t> src = {1, 2, 3, 4, 5, 6};  // 3 rows of 2
  const std::vector<int64_t> index = {2, 0, 2};
  std::vector<int32_t> dst(6, -1);
  gather_rows(dst.data(), src.data(), 8, 3, index.data(), 3);
  EXPECT_EQ(dst, (std::vector<int32_t>{5, 6, 1, 2, 5, 6}));
  const std::vector<int64_t> bad = {3};
  EXPECT_THROW(gather_rows(dst.data(), src.data(), 8, 3, bad.data(), 1), std::out_of_range);
}

TEST(CpuLayout, ConvertRoundsToBf16AndWidensExactly) {
  // 1 + 2^-8 lies exactly between two bf16 values: ties go to the even one (1.0).
  const std::vector<float> f = {1.0f + 1.0f / 256.0f, 1.0f + 3.0f / 256.0f, -0.0f, 3.5f};
  std::vector<bf16> h(f.size());
  convert(h.data(), f.data(), static_cast<int64_t>(f.size()));
  EXPECT_EQ(h[0].bits, 0x3F80);
  EXPECT_EQ(h[1].bits, 0x3F82);
  EXPECT_EQ(h[2].bits, 0x8000);
  EXPECT_EQ(h[3].bits, 0x4060);
  std::vector<double> wide(f.size());
  convert(wide.data(), h.data(), static_cast<int64_t>(h.size()));
  EXPECT_EQ(wide[1], 1.0 + 2.0 / 128.0);
  // Through float when the source is double: 1 + 2^-30 rounds to 1 in float first.
  const double d = 1.0 + 1.0 / 1073741824.0;
  bf16 one{};
  convert(&one, &d, 1);
  EXPECT_EQ(one.bits, 0x3F80);
  // Large sizes split across threads and give the same bits as the scalar rule.
  std::vector<float> big(70000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 1.0001f;
  std::vector<bf16> hb(big.size());
  convert(hb.data(), big.data(), static_cast<int64_t>(big.size()));
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(hb[i].bits, to_bf16(big[i]).bits) << i;
}

TEST(CpuLayout, FloatToIntegerSaturatesAndSendsNanToZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> f = {nan, -nan, inf, -inf, 3e9f, -3e9f, 2.9f, -2.9f, -0.5f, 2147483520.0f, -2147483648.0f};
  std::vector<int32_t> i32(f.size());
  convert(i32.data(), f.data(), static_cast<int64_t>(f.size()));
  EXPECT_EQ(i32, (std::vector<int32_t>{0, 0, 2147483647, -2147483647 - 1, 2147483647, -2147483647 - 1, 2, -2, 0,
                                       2147483520, -2147483647 - 1}));
  std::vector<uint8_t> u8(f.size());
  convert(u8.data(), f.data(), static_cast<int64_t>(f.size()));
  EXPECT_EQ(u8, (std::vector<uint8_t>{0, 0, 255, 0, 255, 0, 2, 0, 0, 255, 0}));
  // int64: 2^63 is the first float beyond the range; doubles just inside it truncate.
  const std::vector<double> d = {9.3e18, -9.3e18, 9223372036854774784.0, -9223372036854775808.0, nan, 1e300};
  std::vector<int64_t> i64(d.size());
  convert(i64.data(), d.data(), static_cast<int64_t>(d.size()));
  EXPECT_EQ(i64, (std::vector<int64_t>{9223372036854775807, -9223372036854775807 - 1, 9223372036854774784,
                                       -9223372036854775807 - 1, 0, 9223372036854775807}));
  // bf16 sources go through float by the same rule.
  const std::vector<bf16> h = {bf16{0x7FC0}, bf16{0x7F80}, bf16{0xCF80}};  // NaN, inf, -2^32
  std::vector<int32_t> hi(h.size());
  convert(hi.data(), h.data(), static_cast<int64_t>(h.size()));
  EXPECT_EQ(hi, (std::vector<int32_t>{0, 2147483647, -2147483647 - 1}));
}

}  // namespace
}  // namespace rcts::cpu
