// What the cuda-cudnn backend hands cuDNN's fused SDPA (design §11), checked on the host
// before any graph is built, so a refusal names the value instead of surfacing as a
// failed heuristic on the device. The limits are the ones cuDNN 9 documents for every
// architecture it runs on (the frontend's validate() allows more on some GPUs): bf16
// in and out (rcts has no fp16 activations), one head dim for q, k and v, a multiple
// of 8 and at most 128, and a dropout rate in [0, 1).
#pragma once
#include <string>

#include "reference/backend/fused_attention.hpp"

namespace rcts::cuda {

inline constexpr int64_t kSdpaMaxHeadDim = 128;

// "" when cuDNN's SDPA can take (dtype, shape, p); else why not, naming the config key
// and the value.
std::string sdpa_refusal(DType dtype, const FusedAttentionShape& shape, double p);

}  // namespace rcts::cuda
