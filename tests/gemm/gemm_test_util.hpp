// Test helpers for the GEMM: deterministic operand generation with padded leading
// dimensions, and a scalar reference that implements the accumulation order written
// in kernels/cpu/gemm.hpp literally, one output element at a time.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/gemm.hpp"

namespace rcts::cpu {
// Lets GoogleTest print transpose parameters as N / T.
inline void PrintTo(Trans t, std::ostream* os) { *os << (t == Trans::N ? "N" : "T"); }
}  // namespace rcts::cpu

namespace rcts::cpu::gemm_test {

// splitmix64: a tiny, platform-independent generator for test data.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Full `digits`-bit mantissas in [-1, 1), times 2^e for e in [-3, 3]: products and
  // sums round almost every time, so any change of order (or an unfused multiply-add)
  // shows up in the bits. digits = 24 for float data, 53 for double data.
  double value(int digits) {
    const uint64_t x = next();
    const double m = std::ldexp(static_cast<double>(x >> (64 - digits)), -digits) * 2.0 - 1.0;
    return std::ldexp(m, static_cast<int>(next() % 7) - 3);
  }
};

// A rows x cols matrix stored with leading dimension ld >= cols; the padding holds
// NaN so that a kernel reading past the row width corrupts its result visibly.
template <typename T>
struct Mat {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<T> v;
  Mat(int64_t r, int64_t c, int64_t pad, Rng& rng) : rows(r), cols(c), ld(std::max<int64_t>(1, c + pad)) {
    v.assign(static_cast<size_t>(std::max<int64_t>(1, rows * ld)), std::numeric_limits<T>::quiet_NaN());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) v[i * ld + j] = static_cast<T>(rng.value(std::numeric_limits<T>::digits));
  }
  T* data() { return v.data(); }
  const T* data() const { return v.data(); }
};

template <typename T>
T op_at(Trans t, const T* p, int64_t ld, int64_t r, int64_t c) {
  return t == Trans::N ? p[r * ld + c] : p[c * ld + r];
}

// The contract, literally: per element, K blocks of kGemmKC from k = 0; each block sum
// from +0.0 with fma in increasing k; block sums added in order onto C (accumulate) or
// onto each other (s_0 + s_1 + ...); K == 0 gives C or +0.0.
template <typename T>
void reference_gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                    const T* B, int64_t ldb, T* C, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      T result = accumulate ? C[i * ldc + j] : T(0);
      for (int64_t b = 0; b * kGemmKC < K; ++b) {
        T s = T(0);
        for (int64_t k = b * kGemmKC; k < std::min(K, (b + 1) * kGemmKC); ++k)
          s = std::fma(op_at(ta, A, lda, i, k), op_at(tb, B, ldb, k, j), s);
        result = (b == 0 && !accumulate) ? s : result + s;
      }
      C[i * ldc + j] = result;
    }
  }
}

template <typename T>
auto bits_of(T x) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  U u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Compares two C buffers bit for bit (padding included); describes the first difference.
template <typename T>
::testing::AssertionResult same_bits(const std::vector<T>& want, const std::vector<T>& got, int64_t ldc,
                                     const std::string& what) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << what << ": size differs";
  for (size_t x = 0; x < want.size(); ++x) {
    if (bits_of(want[x]) != bits_of(got[x])) {
      return ::testing::AssertionFailure()
             << what << ": first difference at C[" << static_cast<int64_t>(x) / ldc << "]["
             << static_cast<int64_t>(x) % ldc << "]: want " << want[x] << " (0x" << std::hex
             << bits_of(want[x]) << "), got " << got[x] << " (0x" << bits_of(got[x]) << std::dec << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

inline const char* name(Trans t) { return t == Trans::N ? "N" : "T"; }

// Restores the automatic path when a test ends, whatever it selected.
struct PathGuard {
  ~PathGuard() { set_gemm_path(GemmPath::automatic); }
};

}  // namespace rcts::cpu::gemm_test
