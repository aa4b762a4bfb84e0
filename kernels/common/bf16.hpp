// bfloat16 <-> float conversion, round-to-nearest-even, NaN preserved (quietened).
// Header-only, free of libm and host/device (RCTS_HD), so every backend rounds
// activations identically. (CUDA's __float2bfloat16_rn agrees for every non-NaN float
// but returns one canonical NaN; backends use this conversion instead.)
#pragma once
#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace rcts {

struct bf16 {
  uint16_t bits;
};

RCTS_HD inline uint32_t float_bits(float f) { return hd::bits(f); }
RCTS_HD inline float bits_float(uint32_t u) { return hd::float_of(u); }

// Round a float to the nearest bf16 (ties to even). NaN maps to a quiet NaN of the same sign.
// Branch-free (both results computed, one selected) so conversion loops vectorise.
RCTS_HD inline bf16 to_bf16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const bool is_nan = (u & 0x7fffffffu) > 0x7f800000u;
  return bf16{static_cast<uint16_t>(is_nan ? quiet_nan : rounded)};
}
RCTS_HD inline float from_bf16(bf16 h) { return bits_float(static_cast<uint32_t>(h.bits) << 16); }

// Round a float through bf16 and back: the value an activation takes when stored.
RCTS_HD inline float round_bf16(float f) { return from_bf16(to_bf16(f)); }

}  // namespace rcts
