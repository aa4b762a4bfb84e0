// AVX2/FMA float GEMM: packed panels, a 6x16 register-blocked micro-kernel, OpenMP
// over output tiles. Promise: bit-identical to the accumulation order in gemm.hpp
// (and so to the portable path) for every shape, transpose, leading dimension and
// thread count.
//
// How the order is kept: the K loop steps in blocks of exactly kGemmKC starting at
// k = 0 (the contract's blocks, which are also the cache blocks). For one block the
// micro-kernel starts its 12 ymm accumulators at +0.0 and runs k upward with one
// _mm256_fmadd_ps per k, so every lane is the scalar chain s = fma(a_ik, b_kj, s).
// Padding rows/columns of edge tiles are zeros whose lanes are never stored; K is
// never padded (an extra fma(0, 0, s) could turn -0.0 into +0.0). The block sum is
// then stored (first block, no accumulate) or added to C with one plain add, and the
// K blocks of a given C element are visited in increasing order by one thread.
//
// This file alone is compiled with -mavx2 -mfma and is only entered after a CPU
// check. It uses nothing from the C++ standard library whose inline functions could
// be shared (ODR-merged) with baseline code; all helpers have internal linkage.
#include <immintrin.h>
#include <omp.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/gemm.hpp"

namespace rcts::cpu::detail {
namespace {

constexpr int64_t kMR = 6;            // micro-tile rows (one broadcast each)
constexpr int64_t kNR = 16;           // micro-tile columns (two ymm)
constexpr int64_t kKC = kGemmKC;      // contract block = cache block along K
constexpr int64_t kMCMax = 192;       // rows of packed A per block (A block ~192 KiB, L2)
constexpr int64_t kNC = 4096;         // columns of packed B per panel (multiple of kNR)
// A thread should get at least this many multiply-adds (~20 us), else fewer threads
// are used: a fork/join costs microseconds on idle cores and far more on busy ones.
constexpr int64_t kMinWorkPerThread = int64_t{1} << 20;

inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Transpose the 8x8 block r[0..7] in place (r[i][j] -> r[j][i]).
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

struct Operand {
  const float* p;
  int64_t ld;
  bool trans;  // stored transposed relative to its op() view
};

// Pack op(B)[k0 .. k0+kc) x [j0 .. j0+nr) into dst[k*16 + jj]; columns nr..15 are zero.
void pack_b_strip(float* dst, const Operand& b, int64_t k0, int64_t kc, int64_t j0, int64_t nr) {
  if (!b.trans) {  // op(B)[k][j] = B[k*ld + j]: rows are already contiguous
    const float* src = b.p + k0 * b.ld + j0;
    if (nr == kNR) {
      for (int64_t k = 0; k < kc; ++k, src += b.ld, dst += kNR) {
        _mm256_store_ps(dst, _mm256_loadu_ps(src));
        _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + 8));
      }
    } else {
      for (int64_t k = 0; k < kc; ++k, src += b.ld, dst += kNR)
        for (int64_t jj = 0; jj < kNR; ++jj) dst[jj] = jj < nr ? src[jj] : 0.0f;
    }
    return;
  }
  // op(B)[k][j] = B[j*ld + k]: 16 source rows, transposed 8x8 at a time.
  const float* src = b.p + j0 * b.ld + k0;
  int64_t k = 0;
  if (nr == kNR) {
    for (; k + 8 <= kc; k += 8) {
      for (int64_t h = 0; h < 2; ++h) {
        __m256 r[8];
        for (int64_t t = 0; t < 8; ++t) r[t] = _mm256_loadu_ps(src + (h * 8 + t) * b.ld + k);
        transpose8(r);
        for (int64_t t = 0; t < 8; ++t) _mm256_store_ps(dst + (k + t) * kNR + h * 8, r[t]);
      }
    }
  }
  for (; k < kc; ++k)
    for (int64_t jj = 0; jj < kNR; ++jj) dst[k * kNR + jj] = jj < nr ? src[jj * b.ld + k] : 0.0f;
}

// Pack op(A)[i0 .. i0+mr) x [k0 .. k0+kc) into dst[k*6 + r]; rows mr..5 are zero.
void pack_a_strip(float* dst, const Operand& a, int64_t i0, int64_t mr, int64_t k0, int64_t kc) {
  if (a.trans) {  // op(A)[i][k] = A[k*ld + i]: six contiguous floats per k
    const float* src = a.p + k0 * a.ld + i0;
    for (int64_t k = 0; k < kc; ++k, src += a.ld, dst += kMR)
      for (int64_t r = 0; r < kMR; ++r) dst[r] = r < mr ? src[r] : 0.0f;
    return;
  }
  // op(A)[i][k] = A[i*ld + k]: six source rows, transposed 8 k at a time (two dummy rows).
  const float* src = a.p + i0 * a.ld + k0;
  int64_t k = 0;
  if (mr == kMR) {
    for (; k + 8 <= kc; k += 8) {
      __m256 r[8];
      for (int64_t t = 0; t < kMR; ++t) r[t] = _mm256_loadu_ps(src + t * a.ld + k);
      r[6] = r[7] = _mm256_setzero_ps();
      transpose8(r);
      for (int64_t t = 0; t < 8; ++t) {  // keep lanes 0..5 of each transposed row
        float* d = dst + (k + t) * kMR;
        _mm_storeu_ps(d, _mm256_castps256_ps128(r[t]));
        _mm_storel_pi(reinterpret_cast<__m64*>(d + 4), _mm256_extractf128_ps(r[t], 1));
      }
    }
  }
  for (; k < kc; ++k)
    for (int64_t r = 0; r < kMR; ++r) dst[k * kMR + r] = r < mr ? src[r * a.ld + k] : 0.0f;
}

// One 6x16 tile for one K block: acc = sum_k a[k] (x) b[k] from +0.0, k increasing,
// then C = acc (first) or C = C + acc. Only the top-left mr x nr part is written.
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

// How one (column panel, K block) step is cut into work items: row blocks of `mc`
// rows (whole 6-row strips) times column chunks of `chunk` 16-column strips. One
// thread gets about one row block of at most kMCMax rows; several threads get at
// least kItemsPerThread items each, handed out dynamically, so a thread that the OS
// deschedules on a busy machine does not hold the others up for long.
struct Items {
  int64_t mc, n_rblocks, chunk, n_cchunks;
};
constexpr int64_t kItemsPerThread = 4;

Items cut_items(int64_t M, int64_t panel_strips, int team) {
  const int64_t strips_m = ceil_div(M, kMR);
  const int64_t want = team > 1 ? kItemsPerThread * team : 1;
  const int64_t n_rb = max64(ceil_div(M, kMCMax), min64(want, strips_m));
  Items it;
  it.mc = ceil_div(strips_m, n_rb) * kMR;
  it.n_rblocks = ceil_div(M, it.mc);
  const int64_t n_cc = min64(panel_strips, max64(1, ceil_div(want, it.n_rblocks)));
  it.chunk = ceil_div(panel_strips, n_cc);
  it.n_cchunks = ceil_div(panel_strips, it.chunk);
  return it;
}

}  // namespace

void gemm_f32_avx2(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  const Operand a{A, lda, ta == Trans::T};
  const Operand b{B, ldb, tb == Trans::T};
  const int64_t nc_max = min64(kNC, ceil_div(N, kNR) * kNR);
  const int64_t b_floats = kKC * nc_max;
  const int64_t a_floats = kMCMax * kKC;

  int nt = omp_get_max_threads();
  const int64_t by_work = M * N * K / kMinWorkPerThread;
  if (by_work < nt) nt = static_cast<int>(max64(1, by_work));
  // Two B panels, alternated per K step (see the barrier note below), then one
  // packed A block per thread.
  float* const scratch = gemm_scratch(static_cast<size_t>(2 * b_floats + nt * a_floats));

#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    // The team may be smaller than asked (nested regions); cut work by its real size.
    const int team = omp_get_num_threads();
    float* const apack = scratch + 2 * b_floats + omp_get_thread_num() * a_floats;
    int64_t step = 0;  // counts (jc, pc) steps, identically in every thread

    for (int64_t jc = 0; jc < N; jc += kNC) {
      const int64_t nc = min64(kNC, N - jc);
      const int64_t panel_strips = ceil_div(nc, kNR);
      const Items it = cut_items(M, panel_strips, team);
      for (int64_t pc = 0; pc < K; pc += kKC) {  // the contract's K blocks, in order
        const int64_t kc = min64(kKC, K - pc);
        const bool first = pc == 0 && !accumulate;
        float* const bpack = scratch + (step++ % 2) * b_floats;
#pragma omp for schedule(dynamic, 4)
        for (int64_t s = 0; s < panel_strips; ++s)
          pack_b_strip(bpack + s * kc * kNR, b, pc, kc, jc + s * kNR, min64(kNR, nc - s * kNR));
        // Implicit barrier: the B panel is complete before anyone reads it. A thread
        // reaches it only after its share of the previous step, so it also orders
        // that step's C updates before this step's and guarantees nobody still reads
        // the other B buffer when the next step repacks it. Hence `nowait` below:
        // one barrier per K step instead of two.
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t item = 0; item < it.n_rblocks * it.n_cchunks; ++item) {
          const int64_t ic = item / it.n_cchunks * it.mc;
          const int64_t mc = min64(it.mc, M - ic);
          const int64_t s_lo = item % it.n_cchunks * it.chunk;
          const int64_t s_hi = min64(panel_strips, s_lo + it.chunk);
          for (int64_t ir = 0; ir < mc; ir += kMR)
            pack_a_strip(apack + ir * kc, a, ic + ir, min64(kMR, mc - ir), pc, kc);
          // Each B micro-panel stays in L1 while it meets every A strip of the block.
          for (int64_t s = s_lo; s < s_hi; ++s) {
            const int64_t j = jc + s * kNR;
            const int64_t nr = min64(kNR, N - j);
            for (int64_t ir = 0; ir < mc; ir += kMR)
              micro_kernel(kc, apack + ir * kc, bpack + s * kc * kNR, C + (ic + ir) * ldc + j, ldc,
                           min64(kMR, mc - ir), nr, first);
          }
        }
      }
    }
  }
}

}  // namespace rcts::cpu::detail
