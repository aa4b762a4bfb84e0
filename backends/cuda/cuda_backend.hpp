// The CUDA backend, exact tier (design §11): the exact-tier bodies on the GPU, one thread
// per output (backends/cuda/kernels.cu), device memory from a stream-ordered pool,
// pinned host buffers, and copies ordered on one main stream. It claims the CPU's golden
// files. Built when CMake finds nvcc; without a device it reports why and never starts.
#pragma once
#include <memory>
#include <string>

#include "reference/backend/backend.hpp"

namespace rcts::cuda {

// Empty when a CUDA device can be used; otherwise why not ("no CUDA device: ...").
std::string unavailable_reason();

// The backend on device 0 (throws rcts::Error when unavailable_reason() is not empty).
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace rcts::cuda
