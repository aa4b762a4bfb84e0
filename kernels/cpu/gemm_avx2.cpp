// AVX2/FMA float GEMM: a 6x16 register-blocked micro-kernel (12 ymm accumulators)
// under the shared packed driver (gemm_blocked.inc, which says how the accumulation
// order of gemm.hpp is kept). Bit-identical to the portable path for every shape,
// transpose, leading dimension and thread count.
//
// Compiled with -mavx2 -mfma and only entered after a CPU check. It uses nothing from
// the C++ standard library whose inline functions could be shared (ODR-merged) with
// baseline code; all helpers have internal linkage.
#include <immintrin.h>
#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/gemm.hpp"

namespace rcts::cpu::detail {
namespace {

constexpr int64_t kMR = 6;   // micro-tile rows (one broadcast each)
constexpr int64_t kNR = 16;  // micro-tile columns (two ymm)

void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                  int64_t ldc, int64_t mr, int64_t nr, bool first) {
  __m256 acc[kMR][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  // Pull the C tile towards L1 while the FMAs run.
#pragma GCC unroll 6
  for (int r = 0; r < kMR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kNR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b + k * kNR);
    const __m256 b1 = _mm256_load_ps(b + k * kNR + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMR; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + k * kMR + r);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  if (mr == kMR && nr == kNR) {
#pragma GCC unroll 6
    for (int r = 0; r < kMR; ++r) {
      float* cr = c + r * ldc;
      if (first) {
        _mm256_storeu_ps(cr, acc[r][0]);
        _mm256_storeu_ps(cr + 8, acc[r][1]);
      } else {
        _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), acc[r][0]));
        _mm256_storeu_ps(cr + 8, _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[r][1]));
      }
    }
    return;
  }
  alignas(32) float tile[kMR * kNR];
  for (int r = 0; r < kMR; ++r) {
    _mm256_store_ps(tile + r * kNR, acc[r][0]);
    _mm256_store_ps(tile + r * kNR + 8, acc[r][1]);
  }
  for (int64_t r = 0; r < mr; ++r) {
    float* cr = c + r * ldc;
    const float* t = tile + r * kNR;
    if (first) {
      for (int64_t j = 0; j < nr; ++j) cr[j] = t[j];
    } else {
      for (int64_t j = 0; j < nr; ++j) cr[j] = cr[j] + t[j];
    }
  }
}

#include "kernels/cpu/gemm_blocked.inc"

}  // namespace

void gemm_f32_avx2(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  gemm_blocked(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

}  // namespace rcts::cpu::detail
