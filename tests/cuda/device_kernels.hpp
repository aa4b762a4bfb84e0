// Test-only device kernels for the exactness tests (device_exactness_test.cpp): the
// shared headers of kernels/common evaluated on the GPU over large input sets.
#pragma once
#include <cstdint>

namespace rcts::cuda_test {

// out[4*i + w] = word w of philox::block(seeds[i], blocks[i]) for i < n (device arrays).
void philox_blocks(uint32_t* out, const uint64_t* seeds, const uint64_t* blocks, int64_t n);
// out[i] = to_bf16(bits_float(first + i)).bits for i < n (device array).
void bf16_of_bits(uint16_t* out, uint32_t first, int64_t n);
// out[6*i + f] = detmath function f (exp, expm1, log, tanh, erf, sigmoid) of in[i].
void detmath_float(float* out, const float* in, int64_t n);
void detmath_double(double* out, const double* in, int64_t n);
// Launches a test kernel with 2048 threads per block through cuda::launch_shaped: a
// launch that fails on every machine (the error path's test).
void launch_too_wide();
// Waits for the kernels above; returns the first error as text ("" when none).
const char* synchronize();

}  // namespace rcts::cuda_test
