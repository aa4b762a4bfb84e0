#include "reference/modules/token_mixer.hpp"

#include "reference/modules/attention.hpp"
#include "reference/modules/transformer_layer.hpp"

namespace rcts {

std::unique_ptr<Module> make_token_mixer(Runtime& rt, const std::string& layer_path, const SelectiveRecompute& r,
                                         int layer) {
  return std::make_unique<SelfAttention>(rt, layer_path + ".attention", r.core_attn, layer);
}

}  // namespace rcts
