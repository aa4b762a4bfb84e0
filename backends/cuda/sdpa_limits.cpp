#include "backends/cuda/sdpa_limits.hpp"

namespace rcts::cuda {

std::string sdpa_refusal(DType dtype, const FusedAttentionShape& sh, double p) {
  const std::string head = "head dim " + std::to_string(sh.d) + " (hidden_size / num_attention_heads)";
  if (dtype != DType::bf16)
    return std::string("cuDNN's fused attention takes bf16 activations, model.activation_dtype is ") +
           std::string(dtype_name(dtype));
  if (sh.b <= 0 || sh.a <= 0 || sh.s <= 0 || sh.d <= 0)
    return "empty attention: b " + std::to_string(sh.b) + ", heads " + std::to_string(sh.a) + ", s " +
           std::to_string(sh.s) + ", " + head;
  if (sh.dv != sh.d)
    return "v head dim " + std::to_string(sh.dv) + " differs from the q/k " + head + " (MLA is not fused here)";
  if (sh.d % 8 != 0) return head + " is not a multiple of 8 (cuDNN's SDPA needs 16-byte rows)";
  if (sh.d > kSdpaMaxHeadDim) return head + " exceeds " + std::to_string(kSdpaMaxHeadDim);
  if (!(p >= 0.0 && p < 1.0)) return "model.attention_dropout = " + std::to_string(p) + " is outside [0, 1)";
  return {};
}

}  // namespace rcts::cuda
