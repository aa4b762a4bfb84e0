// Dropout sites. A site draws its mask from the live device generator (which a
// tracker fork may have switched to a named stream), records the draw — with the
// stream actually in effect — in the runtime's mask log, saves the mask (u8, one byte per element) as "mask" in its
// context and returns the scaled output. p == 0 or eval: identity, nothing drawn.
#pragma once
#include <string>

#include "reference/runtime/runtime.hpp"

namespace rcts {

struct DropoutSite {
  std::string path;  // e.g. "layers.0.attention.hidden_dropout"
  std::string kind;  // "attention", "hidden" or "expert": decides the stream it must use
  double p = 0;
};

bool dropout_active(const Runtime& rt, double p);

// Returns the dropped tensor (x itself when inactive). Saves "mask" in ctx.
Tensor dropout_forward(Runtime& rt, SaveContext& ctx, const DropoutSite& site, const Tensor& x);
// dy * mask * scale (dy itself when inactive).
Tensor dropout_backward(Runtime& rt, SaveContext& ctx, const DropoutSite& site, const Tensor& dy);

// Element-wise a + b rounded once to the activation dtype (residual adds).
Tensor add(Runtime& rt, const Tensor& a, const Tensor& b, std::string name);

}  // namespace rcts
