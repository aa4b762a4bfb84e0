// AVX-512 float GEMM: a 12x32 register-blocked micro-kernel (24 zmm accumulators,
// the A element broadcast from memory into each FMA) under the shared packed driver
// (gemm_blocked.inc, which says how the accumulation order of gemm.hpp is kept).
// Every lane runs the same scalar chain s = fma(a_ik, b_kj, s) as the other paths, so
// the bits equal the portable and AVX2 paths for every shape and thread count.
//
// Compiled with AVX-512 F/DQ/BW/VL flags (kernels/CMakeLists.txt) and only entered
// after a CPU check; like gemm_avx2.cpp it shares no inline code with baseline files.
#include <immintrin.h>
#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/gemm.hpp"

namespace rcts::cpu::detail {
namespace {

constexpr int64_t kMR = 12;  // micro-tile rows (one broadcast each)
constexpr int64_t kNR = 32;  // micro-tile columns (two zmm)

void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                  int64_t ldc, int64_t mr, int64_t nr, bool first) {
  __m512 acc[kMR][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kNR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b + k * kNR);
    const __m512 b1 = _mm512_load_ps(b + k * kNR + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[k * kMR + r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  // Edge tiles write only their first nr columns (masked) and mr rows.
  const __mmask16 m0 = nr >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? __mmask16(0xFFFF) : nr <= 16 ? __mmask16(0) : __mmask16((1u << (nr - 16)) - 1);
  const int64_t rows = mr < kMR ? mr : kMR;
#pragma GCC unroll 12
  for (int r = 0; r < kMR; ++r) {
    if (r >= rows) break;
    float* cr = c + r * ldc;
    if (first) {
      _mm512_mask_storeu_ps(cr, m0, acc[r][0]);
      _mm512_mask_storeu_ps(cr + 16, m1, acc[r][1]);
    } else {
      _mm512_mask_storeu_ps(cr, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), acc[r][0]));
      _mm512_mask_storeu_ps(cr + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr + 16), acc[r][1]));
    }
  }
}

#include "kernels/cpu/gemm_blocked.inc"

}  // namespace

void gemm_f32_avx512(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  gemm_blocked(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

}  // namespace rcts::cpu::detail
