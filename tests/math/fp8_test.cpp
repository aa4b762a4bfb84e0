// FP8 emulation (kernels/exact/fp8.hpp): decode against hand-derived values of the
// e4m3 / e5m2 encodings, encode against hand-derived ties and saturation, and encode
// against a brute-force oracle (nearest finite value, ties to the even code, beyond
// the largest finite value: saturate) on every midpoint, its neighbours and random floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kernels/exact/fp8.hpp"

namespace rcts::exact {
namespace {

float f(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

TEST(Fp8Decode, HandDerivedE4M3) {
  EXPECT_EQ(fp8_decode(0x00, kE4M3), 0.0f);
  EXPECT_EQ(fp8_decode(0x01, kE4M3), std::ldexp(1.0f, -9));       // smallest subnormal
  EXPECT_EQ(fp8_decode(0x07, kE4M3), std::ldexp(7.0f, -9));       // largest subnormal
  EXPECT_EQ(fp8_decode(0x08, kE4M3), std::ldexp(1.0f, -6));       // smallest normal
  EXPECT_EQ(fp8_decode(0x38, kE4M3), 1.0f);                       // exponent 7 = bias
  EXPECT_EQ(fp8_decode(0x3C, kE4M3), 1.5f);
  EXPECT_EQ(fp8_decode(0x7E, kE4M3), 448.0f);                     // S.1111.110
  EXPECT_EQ(fp8_decode(0x78, kE4M3), 256.0f);                     // exponent 15 is finite in e4m3
  EXPECT_TRUE(std::isnan(fp8_decode(0x7F, kE4M3)));
  EXPECT_EQ(fp8_decode(0xFE, kE4M3), -448.0f);
  EXPECT_TRUE(std::signbit(fp8_decode(0x80, kE4M3)));
  EXPECT_EQ(fp8_max(kE4M3), 448.0f);
}

TEST(Fp8Decode, HandDerivedE5M2) {
  EXPECT_EQ(fp8_decode(0x01, kE5M2), std::ldexp(1.0f, -16));
  EXPECT_EQ(fp8_decode(0x04, kE5M2), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp8_decode(0x3C, kE5M2), 1.0f);
  EXPECT_EQ(fp8_decode(0x7B, kE5M2), 57344.0f);
  EXPECT_TRUE(std::isinf(fp8_decode(0x7C, kE5M2)));
  EXPECT_TRUE(std::isnan(fp8_decode(0x7E, kE5M2)));
  EXPECT_EQ(fp8_max(kE5M2), 57344.0f);
}

TEST(Fp8Encode, TiesGoToTheEvenCode) {
  EXPECT_EQ(fp8_encode(1.0f, kE4M3), 0x38);
  EXPECT_EQ(fp8_encode(1.0625f, kE4M3), 0x38);  // halfway 1 (0x38) .. 1.125 (0x39)
  EXPECT_EQ(fp8_encode(1.1875f, kE4M3), 0x3A);  // halfway 1.125 (0x39) .. 1.25 (0x3A)
  EXPECT_EQ(fp8_encode(std::nextafter(1.0625f, 2.0f), kE4M3), 0x39);
  EXPECT_EQ(fp8_encode(std::ldexp(1.0f, -10), kE4M3), 0x00);  // half the smallest subnormal
  EXPECT_EQ(fp8_encode(std::ldexp(1.5f, -10), kE4M3), 0x01);
  EXPECT_EQ(fp8_encode(std::ldexp(3.5f, -9), kE4M3), 0x04);  // halfway 3 .. 4 subnormal quanta
  EXPECT_EQ(fp8_encode(std::ldexp(15.0f, -10), kE4M3), 0x08);  // rounds up into the first normal
  EXPECT_EQ(fp8_encode(1.125f, kE5M2), 0x3C);   // halfway 1 (0x3C) .. 1.25 (0x3D)
  EXPECT_EQ(fp8_encode(1.375f, kE5M2), 0x3E);   // halfway 1.25 (0x3D) .. 1.5 (0x3E)
  EXPECT_EQ(fp8_encode(-1.0625f, kE4M3), 0xB8);
}

TEST(Fp8Encode, SaturatesAndKeepsNaN) {
  EXPECT_EQ(fp8_encode(449.0f, kE4M3), 0x7E);
  EXPECT_EQ(fp8_encode(464.0f, kE4M3), 0x7E);   // a tie to the even 448
  EXPECT_EQ(fp8_encode(1e30f, kE4M3), 0x7E);
  EXPECT_EQ(fp8_encode(INFINITY, kE4M3), 0x7E);
  EXPECT_EQ(fp8_encode(-INFINITY, kE4M3), 0xFE);
  EXPECT_EQ(fp8_encode(NAN, kE4M3), 0x7F);
  EXPECT_EQ(fp8_encode(61440.0f, kE5M2), 0x7B);
  EXPECT_EQ(fp8_encode(INFINITY, kE5M2), 0x7B);
  EXPECT_TRUE(std::isnan(fp8_decode(fp8_encode(-NAN, kE5M2), kE5M2)));
  EXPECT_EQ(fp8_encode(-0.0f, kE4M3), 0x80);
  EXPECT_EQ(fp8_encode(1e-30f, kE4M3), 0x00);
  EXPECT_EQ(fp8_encode(f(0x00000001u), kE5M2), 0x00);  // a float subnormal
}

// The definition, by search: the finite code nearest to |x| (ties: even code), the
// largest finite one for |x| at or beyond it; the sign bit copied.
uint8_t oracle(float x, Fp8Format fmt) {
  const double a = std::fabs(static_cast<double>(x));
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (a >= fp8_max(fmt)) return static_cast<uint8_t>(sign | fmt.max_code);
  int best = 0;
  double best_d = INFINITY;
  for (int c = 0; c <= fmt.max_code; ++c) {
    const double d = std::fabs(static_cast<double>(fp8_decode(static_cast<uint8_t>(c), fmt)) - a);
    if (d < best_d || (d == best_d && (c & 1) == 0)) best = c, best_d = d;
  }
  return static_cast<uint8_t>(sign | best);
}

void sweep(Fp8Format fmt) {
  std::vector<float> xs;
  for (int c = 0; c < fmt.max_code; ++c) {
    const float lo = fp8_decode(static_cast<uint8_t>(c), fmt), hi = fp8_decode(static_cast<uint8_t>(c + 1), fmt);
    const float mid = lo + (hi - lo) / 2;  // exact: a float with one more bit
    for (float x : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) xs.push_back(x), xs.push_back(-x);
  }
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> mant(0, 0x7fffff), exp(127 - 30, 127 + 20), sign(0, 1);
  for (int i = 0; i < 200000; ++i) xs.push_back(f(sign(gen) << 31 | exp(gen) << 23 | mant(gen)));
  int bad = 0;
  for (float x : xs)
    if (fp8_encode(x, fmt) != oracle(x, fmt) && ++bad < 5)
      ADD_FAILURE() << "x = " << x << ": encode " << int(fp8_encode(x, fmt)) << ", oracle " << int(oracle(x, fmt));
  EXPECT_EQ(bad, 0);
}

TEST(Fp8Encode, MatchesTheNearestValueOracleE4M3) { sweep(kE4M3); }
TEST(Fp8Encode, MatchesTheNearestValueOracleE5M2) { sweep(kE5M2); }

TEST(Fp8FakeQuant, ScalesRoundsAndUnscales) {
  // 3.3 * 2 = 6.6 -> e4m3 6.5 (quantum 0.5 in [4, 8)) -> 6.5 / 2.
  EXPECT_EQ(fp8_fake_quant(3.3f, 2.0f, 0.5f, kE4M3), 3.25f);
  EXPECT_EQ(fp8_fake_quant(1000.0f, 1.0f, 1.0f, kE4M3), 448.0f);
}

}  // namespace
}  // namespace rcts::exact
