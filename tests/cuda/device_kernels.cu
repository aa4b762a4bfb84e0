// Test-only kernels: see device_kernels.hpp. Built with the exact tier's flags.
#include <cuda_runtime.h>

#include "backends/cuda/launch_kernel.cuh"

#include "kernels/common/bf16.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/common/philox.hpp"
#include "tests/cuda/device_kernels.hpp"

namespace rcts::cuda_test {

namespace {
constexpr int kThreads = 256;
unsigned grid(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void philox_kernel(uint32_t* out, const uint64_t* seeds, const uint64_t* blocks, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const philox::Counter c = philox::block(seeds[i], blocks[i]);
  for (int w = 0; w < 4; ++w) out[4 * i + w] = c[w];
}

__global__ void bf16_kernel(uint16_t* out, uint32_t first, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = to_bf16(bits_float(first + static_cast<uint32_t>(i))).bits;
}

template <typename T>
__global__ void detmath_kernel(T* out, const T* in, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const T x = in[i];
  out[6 * i + 0] = detmath::exp(x);
  out[6 * i + 1] = detmath::expm1(x);
  out[6 * i + 2] = detmath::log(x);
  out[6 * i + 3] = detmath::tanh(x);
  out[6 * i + 4] = detmath::erf(x);
  out[6 * i + 5] = detmath::sigmoid(x);
}
__global__ void too_wide_kernel(int* out) {
  if (out) *out = 1;
}
}  // namespace

void philox_blocks(uint32_t* out, const uint64_t* seeds, const uint64_t* blocks, int64_t n) {
  philox_kernel<<<grid(n), kThreads>>>(out, seeds, blocks, n);
}
void bf16_of_bits(uint16_t* out, uint32_t first, int64_t n) { bf16_kernel<<<grid(n), kThreads>>>(out, first, n); }
void detmath_float(float* out, const float* in, int64_t n) { detmath_kernel<float><<<grid(n), kThreads>>>(out, in, n); }
void detmath_double(double* out, const double* in, int64_t n) {
  detmath_kernel<double><<<grid(n), kThreads>>>(out, in, n);
}
void launch_too_wide() {
  // 2048 threads exceed every GPU's 1024 per block: the launch fails on any device (and
  // without one, for want of a device), through the backend's own launch helper.
  cuda::launch_shaped("too_wide_kernel", too_wide_kernel, 1, 2048, nullptr, static_cast<int*>(nullptr));
}
const char* synchronize() {
  const cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace rcts::cuda_test
