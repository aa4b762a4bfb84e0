// Philox4x32-10 against the Random123 known-answer vectors, and the rcts stream layout
// philox::block(seed, index) = philox4x32_10({index lo, index hi, 0, 0}, {seed lo, seed hi}).
// Vectors: Random123 examples/kat_vectors ("philox4x32 10" lines: CTR[4] KEY[2] ->
// OUT[4]); the extra single-bit ones are from the longer generated list in
// girving/random123-manual examples/kat_vectors (same format).
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/common/philox.hpp"

namespace rcts {
namespace {

using philox::Counter;
using philox::Key;

struct Kat {
  const char* what;
  Counter ctr;
  Key key;
  Counter out;
};

constexpr Kat kKats[] = {
    {"zero ctr, zero key", {0x00000000, 0x00000000, 0x00000000, 0x00000000}, {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {"all ones", {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {"pi digits", {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {"ctr0=1, key0=1", {0x00000001, 0x00000000, 0x00000000, 0x00000000}, {0x00000001, 0x00000000},
     {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
    {"ctr1=ffffffff, key0=1", {0x00000000, 0xffffffff, 0x00000000, 0x00000000}, {0x00000001, 0x00000000},
     {0x04e2eae1, 0x463cc999, 0xe7786310, 0x65b3dc49}},
    {"ctr0=1, key1=1", {0x00000001, 0x00000000, 0x00000000, 0x00000000}, {0x00000000, 0x00000001},
     {0xccf3076a, 0x6306f434, 0xbea71965, 0xd96fe48a}},
    {"pi digits ctr, key1=80000000", {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0x00000000, 0x80000000},
     {0x63675d2c, 0x422d7c4d, 0x3145d30d, 0x3bce33a4}},
};

std::string hex(const Counter& c) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%08x %08x %08x %08x", c[0], c[1], c[2], c[3]);
  return buf;
}

TEST(Philox, Random123KnownAnswers) {
  for (const Kat& k : kKats) {
    EXPECT_EQ(hex(philox::philox4x32_10(k.ctr, k.key)), hex(k.out)) << k.what;
  }
}

// block() must put the index in counter words 0 (low) and 1 (high) and the seed in
// key words 0 (low) and 1 (high); checked against known answers, not just itself.
TEST(Philox, BlockLayoutKnownAnswers) {
  EXPECT_EQ(hex(philox::block(0, 0)), hex(kKats[0].out));
  EXPECT_EQ(hex(philox::block(1, 1)), hex(kKats[3].out));
  EXPECT_EQ(hex(philox::block(1, 0xffffffff00000000ull)), hex(kKats[4].out));
  EXPECT_EQ(hex(philox::block(0x100000000ull, 1)), hex(kKats[5].out));
}

TEST(Philox, BlockMatchesExplicitCounterAndKey) {
  const uint64_t seeds[] = {0, 1234, 0x0123456789abcdefull, ~0ull};
  const uint64_t indices[] = {0, 1, 17, 0xfedcba9876543210ull, ~0ull};
  for (uint64_t s : seeds)
    for (uint64_t i : indices) {
      const Counter want = philox::philox4x32_10(
          {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0u, 0u},
          {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)});
      EXPECT_EQ(hex(philox::block(s, i)), hex(want)) << "seed " << s << " index " << i;
    }
}

// Neighbouring blocks and seeds give different words (a layout bug that dropped the
// high words or mixed seed and index would make some of these equal).
TEST(Philox, BlocksDifferAcrossIndexSeedAndHighWords) {
  EXPECT_NE(philox::block(7, 0), philox::block(7, 1));
  EXPECT_NE(philox::block(7, 0), philox::block(8, 0));
  EXPECT_NE(philox::block(7, 1), philox::block(7, 1ull << 32));
  EXPECT_NE(philox::block(1ull << 32, 0), philox::block(0, 0));
  EXPECT_NE(philox::block(3, 5), philox::block(5, 3));
}

}  // namespace
}  // namespace rcts
