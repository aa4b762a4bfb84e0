#include "backends/cuda/lt_gemm.hpp"

#include <memory>
#include <set>
#include <sstream>

#include "backends/cuda/lt_api.hpp"
#include "reference/core/error.hpp"

namespace rcts::cuda {

namespace {

void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLASLt: ") + what + " failed with status " + std::to_string(s));
}

template <typename T, typename Destroy> struct Handle {
  T h = nullptr;
  Destroy destroy;
  ~Handle() {
    if (h) destroy(h);
  }
};

// A column-major layout of `rows` x `cols` with leading dimension ld, batched.
cublasLtMatrixLayout_t layout(uint64_t rows, uint64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  lt_check(lt_api().MatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld), "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    lt_check(lt_api().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "batch count");
    lt_check(lt_api().MatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
             "batch stride");
  }
  return l;
}

}  // namespace

LtGemm::LtGemm() { lt_check(lt_api().Create(&handle_), "cublasLtCreate"); }
LtGemm::~LtGemm() { lt_api().Destroy(handle_); }

void LtGemm::bind_workspace(void* p, size_t bytes) {
  std::lock_guard lock(mu_);
  workspace_ = p;
  workspace_bytes_ = p ? bytes : 0;
}

void LtGemm::run(cudaStream_t s, Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                 int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float* C, int64_t ldc,
                 int64_t stride_c, int64_t batch, bool accumulate) {
  RCTS_CHECK(workspace_, "cuBLASLt GEMM: no workspace bound (the Runtime binds Backend::op_workspace_bytes)");
  // C^T (N x M) = op(B)^T (N x K) . op(A)^T (K x M), column-major.
  const cublasOperation_t op_a = tb == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_b = ta == Trans::N ? CUBLAS_OP_N : CUBLAS_OP_T;
  Handle<cublasLtMatmulDesc_t, decltype(LtApi::MatmulDescDestroy)> desc{nullptr, lt_api().MatmulDescDestroy};
  lt_check(lt_api().MatmulDescCreate(&desc.h, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F), "cublasLtMatmulDescCreate");
  lt_check(lt_api().MatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a), "transa");
  lt_check(lt_api().MatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b), "transb");
  using L = Handle<cublasLtMatrixLayout_t, decltype(LtApi::MatrixLayoutDestroy)>;
  L la{tb == Trans::N ? layout(N, K, ldb, batch, stride_b) : layout(K, N, ldb, batch, stride_b),
       lt_api().MatrixLayoutDestroy};
  L lb{ta == Trans::N ? layout(K, M, lda, batch, stride_a) : layout(M, K, lda, batch, stride_a),
       lt_api().MatrixLayoutDestroy};
  L lc{layout(N, M, ldc, batch, stride_c), lt_api().MatrixLayoutDestroy};

  const Key key{static_cast<int>(ta), static_cast<int>(tb), M, N, K, lda, ldb, ldc, stride_a, stride_b, stride_c,
                batch, accumulate};
  cublasLtMatmulAlgo_t algo;
  {
    std::lock_guard lock(mu_);
    auto it = algos_.find(key);
    if (it == algos_.end()) {
      Handle<cublasLtMatmulPreference_t, decltype(LtApi::MatmulPreferenceDestroy)> pref{
          nullptr, lt_api().MatmulPreferenceDestroy};
      lt_check(lt_api().MatmulPreferenceCreate(&pref.h), "cublasLtMatmulPreferenceCreate");
      const uint64_t ws = workspace_bytes_;
      lt_check(lt_api().MatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
               "max workspace");
      const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
      lt_check(lt_api().MatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &none,
                                                    sizeof none),
               "reduction scheme mask");
      cublasLtMatmulHeuristicResult_t result{};
      int found = 0;
      lt_check(lt_api().MatmulAlgoGetHeuristic(handle_, desc.h, la.h, lb.h, lc.h, lc.h, pref.h, 1, &result, &found),
               "cublasLtMatmulAlgoGetHeuristic");
      RCTS_CHECK(found > 0, "cuBLASLt: no algorithm without split-K reduction for a " + std::to_string(M) + "x" +
                                std::to_string(N) + "x" + std::to_string(K) + " GEMM");
      it = algos_.emplace(key, result.algo).first;
    }
    algo = it->second;
  }
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  lt_check(lt_api().Matmul(handle_, desc.h, &alpha, B, la.h, A, lb.h, &beta, C, lc.h, C, lc.h, &algo, workspace_,
                          workspace_bytes_, s),
           "cublasLtMatmul");
}

std::string LtGemm::describe() const {
  std::lock_guard lock(mu_);
  std::set<int> ids;
  for (const auto& [key, algo] : algos_) {
    int id = -1;
    size_t written = 0;
    if (lt_api().MatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written) ==
        CUBLAS_STATUS_SUCCESS)
      ids.insert(id);
  }
  std::ostringstream os;  // (not string concatenation: g++ 12 warns falsely there)
  os << "cublasLt " << lt_api().GetVersion() << ", " << algos_.size() << " pinned shapes (algorithm ids";
  for (int id : ids) os << ' ' << id;
  os << ')';
  return os.str();
}

}  // namespace rcts::cuda
