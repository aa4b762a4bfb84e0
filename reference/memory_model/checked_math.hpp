// int64 arithmetic for the memory model that throws instead of wrapping: with
// dimensions near INT32_MAX a byte or FLOP count exceeds int64, and a wrapped
// (negative) count would be printed as if it were an answer.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "reference/core/error.hpp"

namespace rcts {

[[noreturn]] inline void overflow(const std::string& what, const std::string& expr) {
  throw Error("memory model: " + what + " = " + expr + " overflows int64: the dimensions are too large to count");
}

// a * b; `what` names the quantity in the error ("s*b*h", "layer bytes").
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow(what, std::to_string(a) + " * " + std::to_string(b));
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b, const std::string& what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow(what, std::to_string(a) + " + " + std::to_string(b));
  return r;
}

// The product of all factors, e.g. checked_product({s, b, h}, "s*b*h").
inline int64_t checked_product(std::initializer_list<int64_t> factors, const std::string& what) {
  int64_t r = 1;
  for (int64_t f : factors) r = checked_mul(r, f, what);
  return r;
}

}  // namespace rcts
