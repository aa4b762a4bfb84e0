// Exact, deterministic GEMM for float and double (design §2).
//
// Promise: C[M,N] = (accumulate ? C : 0) + op(A)[M,K] * op(B)[K,N], row-major, with
// every element of C computed in the one accumulation order below. Results are
// bitwise identical across the portable and AVX2 paths, across thread counts and
// across tile positions (ragged edges included); the CUDA exact tier follows the
// same order.
//
// Accumulation order (the contract):
//   K is split into fixed blocks of kGemmKC = 256 consecutive k, starting at k = 0:
//   block b covers k in [b*256, min((b+1)*256, K)); the last block may be shorter.
//   For each C[i][j] and each block b, the block sum s_b starts from +0.0 and
//   accumulates in increasing k:  s_b = fma(op(A)[i][k], op(B)[k][j], s_b)
//   (one correctly rounded fused multiply-add per k). The block sums are then added
//   in block order with plain (unfused) adds:
//     accumulate:  result = ((C[i][j] + s_0) + s_1) + ... + s_{nb-1}
//     otherwise:   result = (s_0 + s_1) + ... + s_{nb-1}
//   K == 0 gives result = accumulate ? C[i][j] : +0.0.
// Every path gives identical bits for every non-NaN result (infinities and signed
// zeros included); where the result is NaN it is NaN on every path, payload unpromised.
//
// Layout: op(A) = A (M x K, row stride lda) or A^T (A stored K x M, row stride lda);
// op(B) = B (K x N, ldb) or B^T (B stored N x K, ldb). C is M x N with row stride ldc.
// C must not alias A or B.
//
// Paths: float uses a packed, register-blocked micro-kernel, AVX-512 (12x32) when the
// CPU has AVX-512 F/DQ/BW/VL, else AVX2/FMA (6x16) when it has AVX2+FMA, otherwise a
// portable std::fma loop; double always uses the portable loop (it serves gradcheck
// runs). OpenMP threads split only output tiles.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/gemm_contract.hpp"

namespace rcts::cpu {

using rcts::kGemmKC;
using rcts::Trans;

// Which float implementation gemm() uses. automatic = the process-wide choice below
// (set_gemm_path; by default the widest path the CPU and OS support: avx512, else
// avx2, else portable). The results are the same bits on every path, only speed
// differs. A path the CPU lacks throws std::runtime_error.
enum class GemmPath { automatic, portable, avx2, avx512 };

// `path` forces an implementation for this call (a backend's kernel table does so);
// automatic follows the process-wide setting.
template <typename T>
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
          int64_t ldb, T* C, int64_t ldc, bool accumulate, GemmPath path = GemmPath::automatic);

extern template void gemm<float>(Trans, Trans, int64_t, int64_t, int64_t, const float*, int64_t,
                                 const float*, int64_t, float*, int64_t, bool, GemmPath);
extern template void gemm<double>(Trans, Trans, int64_t, int64_t, int64_t, const double*, int64_t,
                                  const double*, int64_t, double*, int64_t, bool, GemmPath);

// `batch` independent products with the same shapes: operand i of A, B, C starts at
// A + i*stride_a, B + i*stride_b, C + i*stride_c (each the contract above). Threads split
// the batch (each product then runs on one thread), so bits equal `batch` gemm() calls.
template <typename T>
void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
                  const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
                  bool accumulate, GemmPath path = GemmPath::automatic);

extern template void gemm_batched<float>(Trans, Trans, int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                                         const float*, int64_t, int64_t, float*, int64_t, int64_t, int64_t, bool,
                                         GemmPath);
extern template void gemm_batched<double>(Trans, Trans, int64_t, int64_t, int64_t, const double*, int64_t, int64_t,
                                          const double*, int64_t, int64_t, double*, int64_t, int64_t, int64_t, bool,
                                          GemmPath);

// Process-wide setting for tests and benchmarks.
void set_gemm_path(GemmPath p);
// The path float gemm() uses now (never `automatic`).
GemmPath active_gemm_path();
// Whether this CPU can run the AVX2 / the AVX-512 path.
bool gemm_avx2_supported();
bool gemm_avx512_supported();
// "portable", "avx2", "avx512" or "automatic".
const char* gemm_path_name(GemmPath p);

namespace detail {
// Internal entry points; call gemm() instead. Same arguments and contract; the
// caller has already checked the arguments (M, N, K > 0) and CPU support.
void gemm_f32_avx2(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);
void gemm_f32_avx512(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);
// Scratch for packed panels: 64-byte aligned, owned by the calling thread, reused
// across calls (valid until that thread's next call). Throws std::bad_alloc.
float* gemm_scratch(std::size_t n_floats);
}  // namespace detail

}  // namespace rcts::cpu
