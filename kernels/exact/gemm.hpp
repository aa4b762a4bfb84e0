// GEMM, one output element: C[i][j] in the accumulation order of design §2 (and
// kernels/cpu/gemm.hpp): K in blocks of kGemmKC from k = 0; each block sum starts at
// +0.0 and accumulates fma(op(A)[i][k], op(B)[k][j], s) in increasing k; the block sums
// are added in block order with plain adds, onto C when accumulating.
#pragma once
#include <cstdint>

#include "kernels/common/gemm_contract.hpp"
#include "kernels/exact/arith.hpp"

namespace rcts::exact {

template <typename T>
RCTS_HD inline T gemm_element(Trans ta, Trans tb, int64_t i, int64_t j, int64_t K, const T* A, int64_t lda,
                              const T* B, int64_t ldb, T c, bool accumulate) {
  T result = accumulate ? c : T(0);
  for (int64_t k0 = 0; k0 < K; k0 += kGemmKC) {
    const int64_t k1 = K < k0 + kGemmKC ? K : k0 + kGemmKC;
    T s = T(0);
    for (int64_t k = k0; k < k1; ++k) {
      const T a = ta == Trans::N ? A[i * lda + k] : A[k * lda + i];
      const T b = tb == Trans::N ? B[k * ldb + j] : B[j * ldb + k];
      s = exact::fma(a, b, s);
    }
    // The first block of a product that does not accumulate is the block sum itself.
    result = (k0 == 0 && !accumulate) ? s : result + s;
  }
  return result;
}

}  // namespace rcts::exact
