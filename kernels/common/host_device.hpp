// What lets kernels/common compile for the host and for a CUDA device from one source:
// the RCTS_HD marker (__host__ __device__ under nvcc, nothing otherwise) and bit casts
// between floats and their representations (memcpy on the host, the intrinsics on the
// device). Nothing here uses std:: containers or libm.
#pragma once
#include <cstdint>
#include <cstring>

#ifndef RCTS_HD
#if defined(__CUDACC__)
#define RCTS_HD __host__ __device__
#else
#define RCTS_HD
#endif
#endif

namespace rcts::hd {

RCTS_HD inline uint32_t bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
RCTS_HD inline uint64_t bits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}
RCTS_HD inline float float_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}
RCTS_HD inline double double_of(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

}  // namespace rcts::hd
