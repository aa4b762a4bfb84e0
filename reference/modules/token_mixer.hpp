// The token-mixing sub-layer of a transformer layer: what sits between the input
// layernorm and the first residual add. Today: self-attention (SelfAttention). Other
// mixers (multi-latent attention, gated delta net) are chosen here per layer, so the
// layer itself does not change when one is added.
#pragma once
#include <memory>

#include "reference/modules/module.hpp"
#include "reference/runtime/runtime.hpp"

namespace rcts {

struct SelectiveRecompute;

// `path` is the layer's path; the mixer's module path is derived from it.
std::unique_ptr<Module> make_token_mixer(Runtime& rt, const std::string& layer_path, const SelectiveRecompute& r,
                                         int layer);

}  // namespace rcts
