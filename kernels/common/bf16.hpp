// bfloat16 <-> float conversion, round-to-nearest-even, NaN preserved (quietened).
// Header-only and free of libm so every backend rounds activations identically.
#pragma once
#include <cstdint>
#include <cstring>

namespace rcts {

struct bf16 {
  uint16_t bits;
};

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Round a float to the nearest bf16 (ties to even). NaN maps to a quiet NaN of the same sign.
// Branch-free (both results computed, one selected) so conversion loops vectorise.
inline bf16 to_bf16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const bool is_nan = (u & 0x7fffffffu) > 0x7f800000u;
  return bf16{static_cast<uint16_t>(is_nan ? quiet_nan : rounded)};
}
inline float from_bf16(bf16 h) { return bits_float(static_cast<uint32_t>(h.bits) << 16); }

// Round a float through bf16 and back: the value an activation takes when stored.
inline float round_bf16(float f) { return from_bf16(to_bf16(f)); }

}  // namespace rcts
