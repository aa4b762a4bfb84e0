// The element rule of a dtype conversion, one definition for the CPU kernels and the
// exact-tier bodies (host and device). Widening is exact; narrowing to bf16 goes through
// float with round-to-nearest-even (bf16.hpp). Floating to integer truncates toward zero
// and is defined for every input: NaN gives 0, values beyond the integer's range give its
// minimum or maximum. (A plain static_cast is undefined there in C++; x86 gives the
// "integer indefinite" 0x80..0, a GPU's cvt.rzi saturates: the two would differ.)
// Integer to integer is C++'s modular conversion, the same on both.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16.hpp"
#include "kernels/common/host_device.hpp"

namespace rcts {

// Limits as constants (std::numeric_limits' functions are host-only under nvcc).
template <typename I> struct IntRange {
  static_assert(std::is_integral_v<I>);
  static constexpr bool is_signed = std::is_signed_v<I>;
  static constexpr I max = is_signed ? static_cast<I>(static_cast<std::make_unsigned_t<I>>(~std::make_unsigned_t<I>{0}) >> 1)
                                     : static_cast<I>(~I{0});
  static constexpr I min = is_signed ? static_cast<I>(-max - 1) : I{0};
};

// Floating x to integer I: saturating, NaN -> 0, otherwise truncation toward zero.
// The bounds compare in F: F(max) rounds up to a power of two for 32- and 64-bit
// integers, so x >= F(max) catches exactly the values at or beyond the range's end.
template <typename I, typename F>
RCTS_HD inline I saturating_int(F x) {
  if (!(x == x)) return I{0};
  if (x >= static_cast<F>(IntRange<I>::max)) return IntRange<I>::max;
  if (x <= static_cast<F>(IntRange<I>::min)) return IntRange<I>::min;
  return static_cast<I>(x);
}

template <typename D, typename S>
RCTS_HD inline D convert_element(S x) {
  if constexpr (std::is_same_v<S, bf16> && std::is_same_v<D, bf16>) return x;
  else if constexpr (std::is_same_v<S, bf16>) return convert_element<D, float>(from_bf16(x));
  else if constexpr (std::is_same_v<D, bf16>) return to_bf16(static_cast<float>(x));
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<S>) return saturating_int<D>(x);
  else return static_cast<D>(x);
}

}  // namespace rcts
