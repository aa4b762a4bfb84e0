// The shared pieces of kernels/common compiled for the device, with the exact tier's
// flags (--fmad=false -prec-div=true -prec-sqrt=true -ftz=false): Philox, the dropout
// rule, bf16 rounding and detmath, each called from a kernel. Nothing runs here;
// tests/cuda compiles it to PTX (proving the headers are device code) and scans the PTX
// for approximate, flush-to-zero or fused instructions (design §2: none may appear).
#include <cstdint>

#include "kernels/common/bf16.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/common/dropout_rule.hpp"
#include "kernels/common/philox.hpp"

namespace rcts::cuda_check {

// One Philox block per thread from (seed, offset + i): the exact tier's mask rule.
__global__ void philox_blocks(uint32_t* out, uint64_t seed, uint64_t offset, int64_t blocks) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= blocks) return;
  const philox::Counter c = philox::block(seed, offset + static_cast<uint64_t>(i));
  for (int w = 0; w < 4; ++w) out[4 * i + w] = c[w];
}

__global__ void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  mask[i] = dropout_rule::keep(seed, offset, i, dropout_rule::threshold(p));
}

__global__ void dropout_scale(float* out, const float* in, const uint8_t* mask, int64_t n, double p) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float scale = static_cast<float>(dropout_rule::scale(p));
  out[i] = (in[i] * static_cast<float>(mask[i])) * scale;
}

__global__ void bf16_round(bf16* out, float* back, const float* in, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = to_bf16(in[i]);
  back[i] = round_bf16(in[i]);
}

template <typename T>
__global__ void math(T* out, const T* in, int64_t n) {
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

template __global__ void math<float>(float*, const float*, int64_t);
template __global__ void math<double>(double*, const double*, int64_t);

}  // namespace rcts::cuda_check
