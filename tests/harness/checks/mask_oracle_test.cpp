// The suite's own Philox and mask rule (oracle/philox_masks.hpp) against known answers that
// come from outside rcts: Random123's Philox4x32-10 vectors, the FNV-1a reference
// vectors, and block / threshold / mask values printed by tests/harness/checks/mask_kat.py
// (pure-Python Philox and exact fractions, checked against the Random123 vectors
// before printing; run it by hand to regenerate).
#include "oracle/philox_masks.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "reference/core/error.hpp"

namespace rcts::oracle::philox_masks {
namespace {

std::string hex(const Words& w) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%08x %08x %08x %08x", w[0], w[1], w[2], w[3]);
  return buf;
}

std::string bits(const std::vector<uint8_t>& m) {
  std::string s;
  for (uint8_t b : m) s += static_cast<char>('0' + b);
  return s;
}

// Random123 examples/kat_vectors, "philox4x32 10" lines: CTR[4] KEY[2] -> OUT[4].
TEST(MaskOracle, PhiloxRandom123KnownAnswers) {
  EXPECT_EQ(hex(philox4x32_10({0, 0, 0, 0}, {0, 0})), "6627e8d5 e169c58d bc57ac4c 9b00dbd8");
  EXPECT_EQ(hex(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff})),
            "408f276d 41c83b0e a20bc7c6 6d5451fd");
  EXPECT_EQ(hex(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0})),
            "d16cfe09 94fdcceb 5001e420 24126ea1");
}

// The rcts stream layout (key = seed lo/hi, counter = index lo/hi, 0, 0): mask_kat.py.
TEST(MaskOracle, StreamBlocksKnownAnswers) {
  EXPECT_EQ(hex(stream_block(1234, 0)), "2090b348 da7cf0ab 4401906f cbca470e");
  EXPECT_EQ(hex(stream_block(3952, 7)), "f4b7fec0 763186d0 9682e671 03496df8");
  EXPECT_EQ(hex(stream_block(0x0123456789abcdefull, 0xfedcba9876543210ull)), "2c03a599 d8a290fc 4339955b 8784c033");
}

// floor(p * 2^24 + 1/2), exactly: mask_kat.py with fractions.Fraction.
TEST(MaskOracle, ThresholdKnownValues) {
  EXPECT_EQ(keep_threshold(0.1), 1677722u);
  EXPECT_EQ(keep_threshold(0.2), 3355443u);
  EXPECT_EQ(keep_threshold(0.5), 8388608u);
  EXPECT_EQ(keep_threshold(1.0 / 3.0), 5592405u);
  EXPECT_EQ(keep_threshold(0.0), 0u);
  EXPECT_EQ(keep_threshold(1.0), 16777216u);  // above every 24-bit word: drops all
  // Half-step boundary: 2^-25 * 2^24 + 1/2 = 1 exactly; one ulp below it is 0 (a plain
  // double evaluation of p * 2^24 + 0.5 rounds that up to 1).
  EXPECT_EQ(keep_threshold(std::ldexp(1.0, -25)), 1u);
  EXPECT_EQ(keep_threshold(std::nextafter(std::ldexp(1.0, -25), 0.0)), 0u);
  EXPECT_EQ(keep_threshold(5e-324), 0u);  // smallest subnormal
  EXPECT_THROW(keep_threshold(-0.1), Error);
  EXPECT_THROW(keep_threshold(1.5), Error);
  EXPECT_THROW(keep_threshold(std::nan("")), Error);
}

TEST(MaskOracle, BlocksPerDraw) {
  EXPECT_EQ(blocks_for(0), 0u);
  EXPECT_EQ(blocks_for(1), 1u);
  EXPECT_EQ(blocks_for(4), 1u);
  EXPECT_EQ(blocks_for(5), 2u);
  EXPECT_EQ(blocks_for(4096), 1024u);
}

// Masks and their digests: mask_kat.py.
TEST(MaskOracle, MaskKnownAnswers) {
  const auto a = dropout_mask(1234, 0, 0.1, 37);
  EXPECT_EQ(bits(a), "1111111011111111010111111111111111100");
  EXPECT_EQ(fnv1a64(a.data(), a.size()), 0x429d74d3c8b96597ull);
  const auto b = dropout_mask(3952, 11, 0.5, 16);
  EXPECT_EQ(bits(b), "0000001111101111");
  EXPECT_EQ(fnv1a64(b.data(), b.size()), 0x63fb3a6a1c8d9a0cull);
  const auto c = dropout_mask(0xfeedfacecafebeefull, uint64_t{1} << 40, 0.3, 19);
  EXPECT_EQ(bits(c), "0111001101001111111");
  EXPECT_EQ(fnv1a64(c.data(), c.size()), 0xfbb9f989a6c144f2ull);
  EXPECT_EQ(bits(dropout_mask(1234, 0, 0.0, 6)), "111111");
  EXPECT_EQ(bits(dropout_mask(1234, 0, 1.0, 6)), "000000");
  EXPECT_TRUE(dropout_mask(1234, 0, 0.1, 0).empty());
}

// FNV-1a 64 reference vectors (Fowler/Noll/Vo test suite).
TEST(MaskOracle, Fnv1aReferenceVectors) {
  EXPECT_EQ(fnv1a64(nullptr, 0), 0xcbf29ce484222325ull);
  const std::string a = "a", foobar = "foobar";
  EXPECT_EQ(fnv1a64(reinterpret_cast<const uint8_t*>(a.data()), a.size()), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64(reinterpret_cast<const uint8_t*>(foobar.data()), foobar.size()), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace rcts::oracle::philox_masks
