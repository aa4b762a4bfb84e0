// cuBLASLt, loaded when the first fast-tier GEMM handle is made rather than at process
// start. Linking libcublasLt (a 540 MB library with ~390k relocations) costs every
// process that links the backends about 85 ms before main(): every rcts command and
// every test, though only the cuda-fast and cuda-cudnn tiers ever call it. The entry
// points are typed from cublasLt.h itself (decltype), so a signature cannot drift.
#pragma once
#include <cublasLt.h>

#include <string>

namespace rcts::cuda {

// Every cuBLASLt function rcts calls, once: X(name) for cublasLt<name>.
#define RCTS_CUBLASLT_FUNCTIONS(X)                                                                                  \
  X(Create) X(Destroy) X(GetVersion) X(Matmul) X(MatmulAlgoConfigGetAttribute) X(MatmulAlgoGetHeuristic)            \
  X(MatmulDescCreate) X(MatmulDescDestroy) X(MatmulDescSetAttribute) X(MatmulPreferenceCreate)                     \
  X(MatmulPreferenceDestroy) X(MatmulPreferenceSetAttribute) X(MatrixLayoutCreate) X(MatrixLayoutDestroy)          \
  X(MatrixLayoutSetAttribute)

struct LtApi {
#define RCTS_LT_POINTER(name) decltype(&cublasLt##name) name = nullptr;
  RCTS_CUBLASLT_FUNCTIONS(RCTS_LT_POINTER)
#undef RCTS_LT_POINTER
  std::string library;  // the file it was loaded from
};

// Loads `library` (a path or a soname) and resolves every entry point; throws rcts::Error
// naming the library and, for a missing symbol, the symbol. The handle is never closed.
LtApi load_lt_api(const std::string& library);

// The process's cuBLASLt: the library CMake found (RCTS_CUBLASLT_FILE), loaded on first
// call; a load failure is rethrown on every call.
const LtApi& lt_api();

}  // namespace rcts::cuda
