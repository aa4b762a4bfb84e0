// The few arithmetic helpers the exact-tier bodies need on host and device: a
// correctly rounded fused multiply-add (written explicitly where an order uses it) and
// square root. Both are IEEE correctly rounded on either side, so they agree bit for bit.
#pragma once
#include <cmath>

#include "kernels/common/host_device.hpp"

namespace rcts::exact {

RCTS_HD inline float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
RCTS_HD inline double fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

RCTS_HD inline float sqrt(float x) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}
RCTS_HD inline double sqrt(double x) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

}  // namespace rcts::exact
