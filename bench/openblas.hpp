// OpenBLAS loaded at run time (dlopen), for the benchmarks' comparison columns: the
// reference never links a BLAS, so the benchmarks must not either. Header-only; used
// by rcts-bench and rcts-gemm-bench.
#pragma once
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/cpu/gemm.hpp"

namespace rcts::bench {

class OpenBlas {
 public:
  // Loads `path` ("" = not wanted). On failure says why on stderr and stays unloaded.
  explicit OpenBlas(const std::string& path) {
    if (path.empty()) return;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      std::fprintf(stderr, "openblas: cannot load %s: %s\n", path.c_str(), dlerror());
      return;
    }
    sgemm_ = reinterpret_cast<SgemmFn>(dlsym(h, "cblas_sgemm"));
    set_threads_ = reinterpret_cast<SetThreadsFn>(dlsym(h, "openblas_set_num_threads"));
    corename_ = reinterpret_cast<CoreNameFn>(dlsym(h, "openblas_get_corename"));
    if (!sgemm_) std::fprintf(stderr, "openblas: %s has no cblas_sgemm\n", path.c_str());
    path_ = path;
  }
  bool loaded() const { return sgemm_ != nullptr; }
  const std::string& path() const { return path_; }
  // The kernel family OpenBLAS chose for this CPU ("SkylakeX", "Haswell", "Prescott"...).
  std::string core() const { return corename_ ? corename_() : "?"; }
  void set_threads(int n) const {
    if (set_threads_) set_threads_(n);
  }
  // Row-major C = op(A) op(B), the same arguments as rcts::cpu::gemm without accumulate.
  void sgemm(cpu::Trans ta, cpu::Trans tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
             const float* B, int64_t ldb, float* C, int64_t ldc) const {
    constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
    sgemm_(kRowMajor, ta == cpu::Trans::N ? kNoTrans : kTrans, tb == cpu::Trans::N ? kNoTrans : kTrans,
           static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), 1.0f, A, static_cast<int>(lda), B,
           static_cast<int>(ldb), 0.0f, C, static_cast<int>(ldc));
  }

 private:
  using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                           float*, int);
  using SetThreadsFn = void (*)(int);
  using CoreNameFn = const char* (*)();
  SgemmFn sgemm_ = nullptr;
  SetThreadsFn set_threads_ = nullptr;
  CoreNameFn corename_ = nullptr;
  std::string path_;
};

}  // namespace rcts::bench
