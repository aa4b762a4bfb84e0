// cuDNN's fused SDPA (forward and backward, causal, dropout from (seed, offset)) as the
// cuda-cudnn backend's FusedAttention (reference/backend/fused_attention.hpp, design
// §11), through the cuDNN graph API by way of the header-only cudnn-frontend. One graph
// per (direction, shape, rate, scale), built once and kept; q, k, v in head layout, the
// output and its gradient in token layout (strides, no permute), so one run uses one engine
// per shape; the backward asks for cuDNN's deterministic algorithm and every plan
// carrying the NONDETERMINISTIC numerical note is deselected. The (seed, offset) pair
// and cuDNN's workspace live in the backend's op workspace, which the Runtime
// allocates through its tracker; a plan needing more is an error naming both sizes.
// Built only when CMake finds cuDNN and the frontend headers (scripts/cudnn-frontend).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "reference/backend/fused_attention.hpp"

namespace rcts::cuda {

class CudnnAttention : public FusedAttention {
 public:
  // The op workspace it needs: 256 bytes for the (seed, offset) slot, then cuDNN's.
  static constexpr int64_t kWorkspaceBytes = int64_t{64} << 20;
  virtual void bind_workspace(std::byte* p, int64_t bytes) = 0;
  // "cuDNN 91900, frontend 13200", for the backend's description.
  virtual std::string describe() const = 0;
};

// On `stream` (the backend's main stream); throws rcts::Error when cuDNN cannot start.
std::unique_ptr<CudnnAttention> make_cudnn_attention(cudaStream_t stream);

}  // namespace rcts::cuda
