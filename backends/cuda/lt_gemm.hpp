// The fast tier's float GEMM (design §11): cuBLASLt, pinned so that a run and its rerun
// on one GPU give the same bits. CUBLAS_COMPUTE_32F_PEDANTIC (no TF32, no reduced
// precision), the reduction-scheme mask NONE (no split-K across CTAs), one fixed
// workspace the Runtime accounts (bound by the backend), one stream, and the algorithm
// picked by the heuristic once per shape and then kept for the process (the heuristic's
// answer may change with free memory; the kept one cannot). cuBLAS documents no
// accumulation order, so the fast tier is never compared with the CPU: its checks are
// recompute == baseline and run == rerun within the tier.
//
// Row-major C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "kernels/common/gemm_contract.hpp"

namespace rcts::cuda {

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void bind_workspace(void* p, size_t bytes);
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  // The contract of Ops::gemm_batched (batch 1: gemm); K > 0, M, N > 0.
  void run(cudaStream_t s, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
           int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float* C, int64_t ldc, int64_t stride_c,
           int64_t batch, bool accumulate);

  // "cublasLt <version>, N pinned algorithms (ids ...)" for reports.
  std::string describe() const;

 private:
  using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, bool>;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  mutable std::mutex mu_;
  std::map<Key, cublasLtMatmulAlgo_t> algos_;
};

}  // namespace rcts::cuda
