// GEMM front end: argument checks, path selection, and the portable path.
// The portable path follows the accumulation order of gemm.hpp literally with
// std::fma, one output row per loop iteration (OpenMP splits rows only), so it gives
// the same bits as the AVX2 path and as any thread count. Compiled for baseline x86-64.
#include "kernels/cpu/gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_features.hpp"

namespace rcts::cpu {
namespace {

std::atomic<GemmPath> g_path{GemmPath::automatic};

void check_args(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const void* A, int64_t lda,
                const void* B, int64_t ldb, const void* C, int64_t ldc) {
  if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("gemm: negative dimension");
  const int64_t a_width = ta == Trans::N ? K : M;  // stored row length of A
  const int64_t b_width = tb == Trans::N ? N : K;
  if (lda < std::max<int64_t>(1, a_width) || ldb < std::max<int64_t>(1, b_width) ||
      ldc < std::max<int64_t>(1, N))
    throw std::invalid_argument("gemm: leading dimension smaller than row width (lda=" +
                                std::to_string(lda) + ", ldb=" + std::to_string(ldb) +
                                ", ldc=" + std::to_string(ldc) + ")");
  if (M > 0 && N > 0 && C == nullptr) throw std::invalid_argument("gemm: C is null");
  if (M > 0 && N > 0 && K > 0 && (A == nullptr || B == nullptr))
    throw std::invalid_argument("gemm: A or B is null");
}

// Below this many multiply-adds (~ms of std::fma calls) stay on one thread: a fork
// and join costs little on idle cores but much on busy ones.
constexpr int64_t kParallelMinWork = int64_t{1} << 20;

template <typename T>
void gemm_portable(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda,
                   const T* B, int64_t ldb, T* C, int64_t ldc, bool accumulate) {
  const auto a_at = [&](int64_t i, int64_t k) {
    return ta == Trans::N ? A[i * lda + k] : A[k * lda + i];
  };
#pragma omp parallel if (M * N * K >= kParallelMinWork)
  {
    std::vector<T> s(static_cast<size_t>(N));  // the current block sums of one row
#pragma omp for schedule(static)
    for (int64_t i = 0; i < M; ++i) {
      T* c = C + i * ldc;
      if (K == 0 && !accumulate) std::fill(c, c + N, T(0));
      for (int64_t k0 = 0; k0 < K; k0 += kGemmKC) {
        const int64_t k1 = std::min(K, k0 + kGemmKC);
        if (tb == Trans::N) {
          // Row-at-a-time axpy: s[j] over the whole row, k increasing.
          std::fill(s.begin(), s.end(), T(0));
          for (int64_t k = k0; k < k1; ++k) {
            const T a = a_at(i, k);
            const T* b = B + k * ldb;
            for (int64_t j = 0; j < N; ++j) s[j] = std::fma(a, b[j], s[j]);
          }
        } else {
          // op(B)[k][j] = B[j][k]: a dot product per j reads B contiguously; same chain.
          for (int64_t j = 0; j < N; ++j) {
            const T* b = B + j * ldb;
            T acc = T(0);
            for (int64_t k = k0; k < k1; ++k) acc = std::fma(a_at(i, k), b[k], acc);
            s[j] = acc;
          }
        }
        if (k0 == 0 && !accumulate) {
          std::copy(s.begin(), s.end(), c);
        } else {
          for (int64_t j = 0; j < N; ++j) c[j] = c[j] + s[j];
        }
      }
    }
  }
}

}  // namespace

namespace detail {
// A per-calling-thread, 64-byte aligned buffer that only grows: repeated GEMMs reuse
// it instead of faulting in fresh pages on every call.
float* gemm_scratch(size_t n_floats) {
  struct Buf {
    float* p = nullptr;
    size_t n = 0;
    ~Buf() { ::operator delete(p, std::align_val_t{64}); }
  };
  thread_local Buf buf;
  if (n_floats > buf.n) {
    ::operator delete(buf.p, std::align_val_t{64});
    buf.p = nullptr;
    buf.n = 0;
    buf.p = static_cast<float*>(::operator new(n_floats * sizeof(float), std::align_val_t{64}));
    buf.n = n_floats;
  }
  return buf.p;
}
}  // namespace detail

bool gemm_avx2_supported() { return cpu_has_avx2_fma(); }
bool gemm_avx512_supported() { return cpu_has_avx512(); }

const char* gemm_path_name(GemmPath p) {
  switch (p) {
    case GemmPath::portable: return "portable";
    case GemmPath::avx2: return "avx2";
    case GemmPath::avx512: return "avx512";
    case GemmPath::automatic: break;
  }
  return "automatic";
}

void set_gemm_path(GemmPath p) {
  if (p == GemmPath::avx2 && !gemm_avx2_supported())
    throw std::runtime_error("set_gemm_path(avx2): this CPU lacks AVX2 or FMA");
  if (p == GemmPath::avx512 && !gemm_avx512_supported())
    throw std::runtime_error("set_gemm_path(avx512): this CPU lacks AVX-512 F/DQ/BW/VL");
  g_path.store(p, std::memory_order_relaxed);
}

GemmPath active_gemm_path() {
  const GemmPath p = g_path.load(std::memory_order_relaxed);
  if (p != GemmPath::automatic) return p;
  if (gemm_avx512_supported()) return GemmPath::avx512;
  return gemm_avx2_supported() ? GemmPath::avx2 : GemmPath::portable;
}

template <typename T>
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
          int64_t ldb, T* C, int64_t ldc, bool accumulate, GemmPath path) {
  check_args(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0) {  // empty sum: C stays, or becomes +0.0
    if (!accumulate)
      for (int64_t i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (path == GemmPath::avx2 && !gemm_avx2_supported())
      throw std::runtime_error("gemm: the avx2 path was asked for but this CPU lacks AVX2 or FMA");
    if (path == GemmPath::avx512 && !gemm_avx512_supported())
      throw std::runtime_error("gemm: the avx512 path was asked for but this CPU lacks AVX-512 F/DQ/BW/VL");
    switch (path == GemmPath::automatic ? active_gemm_path() : path) {
      case GemmPath::avx512:
        detail::gemm_f32_avx512(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
      case GemmPath::avx2:
        detail::gemm_f32_avx2(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
      default: break;
    }
  }
  gemm_portable<T>(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

template <typename T>
void gemm_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, int64_t stride_a,
                  const T* B, int64_t ldb, int64_t stride_b, T* C, int64_t ldc, int64_t stride_c, int64_t batch,
                  bool accumulate, GemmPath path) {
  if (batch < 0) throw std::invalid_argument("gemm_batched: negative batch count");
  // A batch pays for a parallel region only when there is enough work in it; a batch of
  // one leaves the threads to the product itself.
  constexpr int64_t kBatchParallelMin = int64_t{1} << 16;
#pragma omp parallel for schedule(static) if (batch > 1 && batch * M * N * K >= kBatchParallelMin)
  for (int64_t i = 0; i < batch; ++i)
    gemm<T>(ta, tb, M, N, K, A + i * stride_a, lda, B + i * stride_b, ldb, C + i * stride_c, ldc, accumulate, path);
}

template void gemm_batched<float>(Trans, Trans, int64_t, int64_t, int64_t, const float*, int64_t, int64_t,
                                  const float*, int64_t, int64_t, float*, int64_t, int64_t, int64_t, bool, GemmPath);
template void gemm_batched<double>(Trans, Trans, int64_t, int64_t, int64_t, const double*, int64_t, int64_t,
                                   const double*, int64_t, int64_t, double*, int64_t, int64_t, int64_t, bool, GemmPath);
template void gemm<float>(Trans, Trans, int64_t, int64_t, int64_t, const float*, int64_t,
                          const float*, int64_t, float*, int64_t, bool, GemmPath);
template void gemm<double>(Trans, Trans, int64_t, int64_t, int64_t, const double*, int64_t,
                           const double*, int64_t, double*, int64_t, bool, GemmPath);

}  // namespace rcts::cpu
