// Fused causal attention (design §11): softmax(causal(q k^T * scale)) with dropout,
// times v, as one library call whose probabilities never exist as a tensor (cuDNN's
// SDPA). A backend offers it through Backend::fused_attention(); core attention uses
// it when model.flash_attention is on (reference/modules/core_attention.hpp).
//
// The dropout mask is drawn by the library's own rule from (seed, offset) and drawn
// again from the same pair in backward: rcts hands it the pair its tracker reserved,
// so a recompute that restores the RNG states redraws the forward's mask. The bits are
// the library's: no rcts rule regenerates them (the masks check judges such draws by
// seed and offset only). All pointers are device memory, in `dtype`: q, k (b, a, s, d)
// and v (b, a, s, dv) contiguous; out and dout in token layout (s, b, a·dv), the
// projection's input, so the output the backward needs is that very tensor (as
// TransformerEngine's sbhd layout has it); stats (b, a, s) f32, the row log-sum-exp of
// the scaled scores.
#pragma once
#include <cstdint>
#include <string>

#include "reference/core/dtype.hpp"

namespace rcts {

struct FusedAttentionShape {
  int64_t b = 0, a = 0, s = 0, d = 0, dv = 0;
};

class FusedAttention {
 public:
  virtual ~FusedAttention() = default;
  // Why this implementation cannot run (dtype, shape, p), naming the value; "" when it can.
  virtual std::string refusal(DType dtype, const FusedAttentionShape& shape, double p) const = 0;
  virtual void forward(void* out, float* stats, const void* q, const void* k, const void* v, DType dtype,
                       const FusedAttentionShape& shape, double scale, double p, uint64_t seed, uint64_t offset) = 0;
  // dq, dk, dv written (=); (seed, offset) those of the forward it differentiates.
  virtual void backward(void* dq, void* dk, void* dv, const void* dout, const void* q, const void* k, const void* v,
                        const void* out, const float* stats, DType dtype, const FusedAttentionShape& shape,
                        double scale, double p, uint64_t seed, uint64_t offset) = 0;
};

}  // namespace rcts
