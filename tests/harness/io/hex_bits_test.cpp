// The one spelling of a double's bits (io/hex_bits.hpp) that golden files, dumps and
// failure messages share.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "harness/io/hex_bits.hpp"

namespace rcts::harness {
namespace {

TEST(HexBits, SpellsTheSixtyFourBitsInLowercase) {
  EXPECT_EQ(double_hex_bits(0.5), "0x3fe0000000000000");
  EXPECT_EQ(double_hex_bits(1.0), "0x3ff0000000000000");
  EXPECT_EQ(double_hex_bits(-0.0), "0x8000000000000000");
  EXPECT_EQ(double_hex_bits(0.0), "0x0000000000000000");
  EXPECT_EQ(double_hex_bits(std::numeric_limits<double>::denorm_min()), "0x0000000000000001");
  EXPECT_EQ(double_hex_bits(-std::numeric_limits<double>::infinity()), "0xfff0000000000000");
  EXPECT_NE(double_hex_bits(0.1), double_hex_bits(std::nextafter(0.1, 1.0)));
}

TEST(HexBits, RecognisesExactlyThatSpelling) {
  EXPECT_TRUE(is_double_hex_bits(double_hex_bits(0.1)));
  EXPECT_TRUE(is_double_hex_bits("0xabcdef0123456789"));
  EXPECT_FALSE(is_double_hex_bits("0xABCDEF0123456789"));  // uppercase
  EXPECT_FALSE(is_double_hex_bits("0x3fe000000000000"));   // 15 digits
  EXPECT_FALSE(is_double_hex_bits("0x3fe00000000000000"));  // 17 digits
  EXPECT_FALSE(is_double_hex_bits("3fe0000000000000xx"));
  EXPECT_FALSE(is_double_hex_bits("0x3fe000000000000g"));
  EXPECT_FALSE(is_double_hex_bits(""));
}

}  // namespace
}  // namespace rcts::harness
