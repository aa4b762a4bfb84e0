// The one way the CUDA tier launches a kernel (nvcc only; kernels.cu and the test
// kernels). `launch` sizes a grid-stride launch over n outputs with the requested
// threads per block capped by what the kernel can run with (its maxThreadsPerBlock,
// from cudaFuncGetAttributes: a register-heavy kernel allows fewer than 1024), and every
// launch records a failure under the kernel's name (LaunchErrors in launch_shape.hpp),
// which the backend turns into an error after the op (check_launches).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "backends/cuda/launch.hpp"
#include "backends/cuda/launch_shape.hpp"

namespace rcts::cuda {

// Records a failed launch (or a failed enqueue: cudaMemsetAsync) of `kernel`.
void record_launch(const char* kernel, cudaError_t e);
// The kernel's maxThreadsPerBlock on this process's device, cached; 0 (and a recorded
// failure) when the runtime cannot say (no device).
int kernel_max_threads(const char* kernel, const void* fn);

inline cudaStream_t st(Stream s) { return static_cast<cudaStream_t>(s); }

constexpr int64_t kMaxBlocks = int64_t{1} << 20;

// A launch of exactly this shape.
template <typename... P, typename... A>
void launch_shaped(const char* name, void (*kernel)(P...), unsigned grid, int threads, Stream s, A&&... args) {
  kernel<<<grid, threads, 0, st(s)>>>(std::forward<A>(args)...);
  record_launch(name, cudaGetLastError());
}

// A grid-stride launch over n outputs.
template <typename... P, typename... A>
void launch(const char* name, void (*kernel)(P...), int64_t n, Stream s, A&&... args) {
  const int threads = block_threads(threads_per_block(), kernel_max_threads(name, reinterpret_cast<const void*>(kernel)));
  if (threads == 0) return;  // recorded by kernel_max_threads
  launch_shaped(name, kernel, grid_blocks(n, threads, kMaxBlocks), threads, s, std::forward<A>(args)...);
}

}  // namespace rcts::cuda
