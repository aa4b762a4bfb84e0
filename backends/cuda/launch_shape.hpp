// How the CUDA launchers pick a launch shape and report a failed launch (plain C++17, no
// CUDA headers, so both rules are unit-tested on machines without a GPU). Results never
// depend on the shape (every thread computes whole outputs in a grid-stride loop), so a
// launcher may always shrink the block to what a kernel can run with.
#pragma once
#include <cstdint>
#include <string>

namespace rcts::cuda {

// Threads per block for a kernel: the requested count, capped by the kernel's own
// limit (cudaFuncAttributes::maxThreadsPerBlock, lower than 1024 when the kernel uses
// many registers) and rounded down to whole warps; a limit below one warp is taken as is.
inline int block_threads(int requested, int kernel_max) {
  if (kernel_max <= 0) return 0;  // no limit known: nothing can be launched
  const int cap = kernel_max >= 32 ? kernel_max / 32 * 32 : kernel_max;
  return requested < cap ? requested : cap;
}

// Blocks of a grid-stride launch over n outputs: at least one, at most `max_blocks`.
inline unsigned grid_blocks(int64_t n, int threads, int64_t max_blocks) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}

// The first failed launch of this thread since the last report, as "kernel: reason".
// A launcher records every launch's outcome; the backend reports after each op and
// turns a failure into an error (cuda_support.hpp, check_launches).
class LaunchErrors {
 public:
  void record(const char* kernel, const char* reason) {
    if (first_.empty()) first_ = std::string(kernel) + ": " + reason;
  }
  // The first failure since the last call ("" when none), then forgets it.
  std::string take() {
    std::string s;
    s.swap(first_);
    return s;
  }

 private:
  std::string first_;
};

}  // namespace rcts::cuda
