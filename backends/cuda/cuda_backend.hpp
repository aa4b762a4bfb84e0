// The CUDA backend (design §11), in two tiers. Exact ("cuda"): the exact-tier bodies on
// the GPU, one thread per output (backends/cuda/kernels.cu); it claims the CPU's golden
// files. cuda-cudnn: the fast tier whose fused attention is cuDNN's SDPA. Fast ("cuda-fast"): float GEMMs by pinned cuBLASLt (lt_gemm.hpp), everything else
// as the exact tier; bitwise only within the tier, no golden files. Both: device memory
// from a stream-ordered pool, pinned host buffers, work on one main stream, real copy
// streams and events for offload (cuda_copy_stream.hpp), NCCL for multi-rank runs
// (nccl_communicator.hpp). Built when CMake finds nvcc; without a device it says why and
// never starts.
#pragma once
#include <memory>
#include <string>

#include "reference/backend/backend.hpp"

namespace rcts::cuda {

// Empty when a CUDA device can be used; otherwise why not ("no CUDA device: ...").
std::string unavailable_reason();

// The backend on this process's GPU (its launcher's local rank, else device 0); throws
// rcts::Error when unavailable_reason() is not empty.
std::unique_ptr<Backend> make_cuda_backend(bool fast = false);

// cuda-cudnn: the fast tier with cuDNN's fused SDPA as its fused attention
// (cudnn_attention.hpp). Not built without cuDNN and the frontend headers: the reason
// then says so (CMake's RCTS_CUDNN_MISSING).
std::string cudnn_unavailable_reason();
std::unique_ptr<Backend> make_cuda_cudnn_backend();

}  // namespace rcts::cuda
