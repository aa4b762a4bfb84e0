// bf16 rounding: to_bf16 (branch-free, so conversion loops vectorise) against an
// independently written round-half-to-even on the bit pattern, for every float.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/common/bf16.hpp"

namespace rcts {
namespace {

// The definition spelled out: keep the high half, round up when the dropped half is
// above one half, or exactly one half and the kept half is odd. NaN: quiet, same sign.
uint16_t reference_bf16(uint32_t u) {
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return static_cast<uint16_t>((u >> 16) | 0x40u);
  uint32_t hi = u >> 16;
  const uint32_t lo = u & 0xffffu;
  if (lo > 0x8000u || (lo == 0x8000u && (hi & 1u))) ++hi;
  return static_cast<uint16_t>(hi);
}

// Every high half (sign, exponent, kept mantissa: all 65536) with every kind of dropped
// half: zero, the smallest, just below / at / just above one half, the largest, and a
// few in between. The result depends on nothing else, so this covers every case class
// (NaN payloads in the low half included) in well under a second.
TEST(Bf16, EveryHighHalfWithEveryKindOfLowHalf) {
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x0040u, 0x1234u, 0x7fffu, 0x8000u,
                           0x8001u, 0x9abcu, 0xc000u, 0xfffeu, 0xffffu};
  int64_t wrong = 0;
  for (uint32_t hi = 0; hi <= 0xffffu; ++hi)
    for (uint32_t lo : lows) {
      const uint32_t u = hi << 16 | lo;
      const uint16_t got = to_bf16(bits_float(u)).bits, want = reference_bf16(u);
      if (got != want && wrong++ < 5)
        ADD_FAILURE() << "input 0x" << std::hex << u << ": got 0x" << got << ", want 0x" << want;
    }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace rcts
