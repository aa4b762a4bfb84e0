// FP8 emulation (design §12): float <-> e4m3 / e5m2 as host/device bodies, integer bit
// arithmetic only (no libm, no float rounding modes), so every backend and the device
// give the same bits.
//
// Formats (OCP FP8, as TransformerEngine uses them):
//   e4m3  1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; S.1111.111 is
//         NaN, so the largest finite value is 448 (S.1111.110); smallest subnormal 2^-9.
//   e5m2  1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-like (exponent 31 is
//         Inf/NaN); largest finite 57344; smallest subnormal 2^-16.
// Rounding: to nearest, ties to even (the even code: its mantissa's last bit is 0).
// Saturation (CUDA's __NV_SATFINITE, which TransformerEngine's casts use): a finite
// value whose rounded magnitude exceeds the largest finite one, and +-Inf, become
// +-max; NaN becomes NaN (0x7F e4m3, 0x7E e5m2, sign kept). Zero keeps its sign.
#pragma once
#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace rcts::exact {

struct Fp8Format {
  int mantissa_bits;   // M
  int bias;
  uint8_t max_code;    // largest finite magnitude code
  uint8_t nan_code;    // magnitude of the NaN this emulation writes
};
inline constexpr Fp8Format kE4M3{3, 7, 0x7E, 0x7F};
inline constexpr Fp8Format kE5M2{2, 15, 0x7B, 0x7E};

// float -> FP8 code (sign in bit 7), round to nearest even, saturating.
RCTS_HD inline uint8_t fp8_encode(float x, Fp8Format f) {
  const uint32_t u = hd::bits(x);
  const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
  const uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint8_t>(sign | f.nan_code);
  if (mag == 0x7f800000u) return static_cast<uint8_t>(sign | f.max_code);
  const int float_exp = static_cast<int>(mag >> 23);
  if (float_exp == 0) return sign;  // float zero or subnormal: far below half the smallest FP8 subnormal
  const int e = float_exp - 127;                      // x = 1.m * 2^e
  const uint32_t sig = (mag & 0x7fffffu) | 0x800000u;  // 24 bits: x = sig * 2^(e - 23)
  const int min_exp = 1 - f.bias;                     // exponent of the smallest normal
  // Bits of sig below the FP8 quantum: 2^(e - M) for normals, 2^(min_exp - M) below.
  const int shift = 23 - f.mantissa_bits + (e < min_exp ? min_exp - e : 0);
  if (shift > 24) return sign;  // sig < 2^24 <= half a quantum: rounds to zero
  uint32_t q = sig >> shift;
  const uint32_t rem = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  // Subnormal range: q counts quanta of 2^(min_exp - M), so q is the code itself (q ==
  // 2^M is the smallest normal). Normal range: q in [2^M, 2^(M+1)], a carry into the
  // exponent falls out of the sum.
  const int64_t code = e < min_exp ? static_cast<int64_t>(q)
                                   : (static_cast<int64_t>(e + f.bias) << f.mantissa_bits) + q -
                                         (int64_t{1} << f.mantissa_bits);
  return static_cast<uint8_t>(sign | (code > f.max_code ? f.max_code : static_cast<uint8_t>(code)));
}

// 2^k as a float, for k in the normal range [-126, 127].
RCTS_HD inline float fp8_pow2(int k) { return hd::float_of(static_cast<uint32_t>(k + 127) << 23); }

// FP8 code -> float (exact: every FP8 value is a float).
RCTS_HD inline float fp8_decode(uint8_t code, Fp8Format f) {
  const bool negative = (code & 0x80u) != 0;
  const uint32_t mag = code & 0x7fu;
  const int exp_field = static_cast<int>(mag >> f.mantissa_bits);
  const uint32_t mant = mag & ((1u << f.mantissa_bits) - 1u);
  const int exp_all_ones = (1 << (7 - f.mantissa_bits)) - 1;
  float v;
  if (f.mantissa_bits == 3 ? mag == 0x7fu : exp_field == exp_all_ones) {
    v = (f.mantissa_bits == 2 && mant == 0) ? hd::float_of(0x7f800000u) : hd::float_of(0x7fc00000u);
  } else if (exp_field == 0) {
    v = static_cast<float>(mant) * fp8_pow2(1 - f.bias - f.mantissa_bits);
  } else {
    v = static_cast<float>((1u << f.mantissa_bits) | mant) * fp8_pow2(exp_field - f.bias - f.mantissa_bits);
  }
  return negative ? -v : v;
}

// The largest finite value of the format (448 for e4m3, 57344 for e5m2).
RCTS_HD inline float fp8_max(Fp8Format f) { return fp8_decode(f.max_code, f); }

// Quantise and dequantise one value with a delayed-scaling scale: the value the FP8
// GEMM sees, decode(encode(x * scale)) * scale_inv, each product rounded once (float).
RCTS_HD inline float fp8_fake_quant(float x, float scale, float scale_inv, Fp8Format f) {
  return fp8_decode(fp8_encode(x * scale, f), f) * scale_inv;
}

}  // namespace rcts::exact
