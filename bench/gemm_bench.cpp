// GEMM throughput benchmark (not a test). Prints GFLOP/s, best of several runs, for
// the suite's typical shapes, all transposes, 1 and 2 threads, for the AVX2 path and
// optionally OpenBLAS's cblas_sgemm for comparison.
//
// CMake target rcts-gemm-bench (bench/CMakeLists.txt). By hand (from the repository root):
//   g++ -std=c++20 -O3 -ffp-contract=off -fopenmp -I. -c kernels/cpu/gemm.cpp -o /tmp/gemm.o
//   g++ -std=c++20 -O3 -ffp-contract=off -fopenmp -mavx2 -mfma -I. -c kernels/cpu/gemm_avx2.cpp -o /tmp/gemm_avx2.o
//   g++ -std=c++20 -O3 -ffp-contract=off -fopenmp -mavx2 -mfma -mavx512f -mavx512dq -mavx512bw -mavx512vl -I.
//     -c kernels/cpu/gemm_avx512.cpp -o /tmp/gemm_avx512.o  (the line above continues here)
//   g++ -std=c++20 -O3 -ffp-contract=off -fopenmp -I. bench/gemm_bench.cpp /tmp/gemm*.o -ldl -o /tmp/gemm_bench
// Run:  /tmp/gemm_bench [portable|avx2|avx512] [M N K ...]   (default: the shapes listed in main)
//   RCTS_BENCH_OPENBLAS=/path/to/libopenblas.so.0 adds an OpenBLAS column.
#include <omp.h>

#include <array>
#include <time.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/openblas.hpp"
#include "kernels/cpu/gemm.hpp"

using rcts::cpu::Trans;

namespace {

const char* env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// RCTS_BENCH_CPUTIME=1 times with process CPU time instead of wall time: on a busy
// machine this hides time spent descheduled, but is only meaningful with 1 thread.
bool g_cputime = false;
double g_seconds = 0.3;  // RCTS_BENCH_SECONDS: time spent per measurement (best run reported)
double now_seconds() {
  timespec ts;
  clock_gettime(g_cputime ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <typename F>
double best_seconds(F&& f) {
  f();  // warm-up: scratch allocation, page faults, thread pool
  double best = 1e30, total = 0;
  for (int rep = 0; rep < 2000 && (rep < 3 || total < g_seconds); ++rep) {
    const double t0 = now_seconds();
    f();
    const double s = now_seconds() - t0;
    total += s;
    if (s < best) best = s;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int arg = 1;
  for (auto p : {rcts::cpu::GemmPath::portable, rcts::cpu::GemmPath::avx2, rcts::cpu::GemmPath::avx512})
    if (argc > arg && std::strcmp(argv[arg], rcts::cpu::gemm_path_name(p)) == 0) {
      rcts::cpu::set_gemm_path(p);
      ++arg;
      break;
    }
  const rcts::bench::OpenBlas blas(env_or_empty("RCTS_BENCH_OPENBLAS"));
  g_cputime = std::getenv("RCTS_BENCH_CPUTIME") != nullptr;
  if (const char* sec = std::getenv("RCTS_BENCH_SECONDS")) g_seconds = std::atof(sec);
  std::vector<std::array<int64_t, 3>> shapes = {{512, 768, 256}, {512, 1024, 256}, {512, 256, 1024},
                                                {512, 3072, 768}, {512, 512, 512},  {1024, 1024, 1024}};
  if (argc - arg >= 3) shapes.clear();
  for (; argc - arg >= 3; arg += 3)
    shapes.push_back({std::atoll(argv[arg]), std::atoll(argv[arg + 1]), std::atoll(argv[arg + 2])});
  std::printf("path=%s\n", rcts::cpu::gemm_path_name(rcts::cpu::active_gemm_path()));
  std::printf("%5s %5s %5s %3s %3s %10s %10s\n", "M", "N", "K", "op", "thr", "rcts", blas.loaded() ? "openblas" : "");
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    std::vector<float> A(M * K), B(K * N), C(M * N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T})
        for (int nt : {1, 2}) {
          if (g_cputime && nt != 1) continue;
          omp_set_num_threads(nt);
          const int64_t lda = ta == Trans::N ? K : M, ldb = tb == Trans::N ? N : K;
          const double flops = 2.0 * M * N * K;
          const double t = best_seconds([&] {
            rcts::cpu::gemm<float>(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), N, false);
          });
          double tb_blas = 0;
          if (blas.loaded()) {
            blas.set_threads(nt);
            tb_blas = best_seconds([&] { blas.sgemm(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, C.data(), N); });
          }
          std::printf("%5ld %5ld %5ld  %c%c %3d %10.1f", static_cast<long>(M), static_cast<long>(N),
                      static_cast<long>(K), ta == Trans::N ? 'N' : 'T', tb == Trans::N ? 'N' : 'T', nt,
                      flops / t / 1e9);
          if (blas.loaded()) std::printf(" %10.1f", flops / tb_blas / 1e9);
          std::printf("\n");
          std::fflush(stdout);
        }
  }
  return 0;
}
