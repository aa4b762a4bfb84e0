#include "reference/modules/token_mixer.hpp"

#include "reference/modules/attention.hpp"
#include "reference/modules/mla_attention.hpp"
#include "reference/modules/gdn.hpp"
#include "reference/modules/transformer_layer.hpp"

namespace rcts {

std::unique_ptr<Module> make_token_mixer(Runtime& rt, const std::string& layer_path, const SelectiveRecompute& r,
                                         int layer) {
  // Hybrid models: the layer pattern (Config::gdn_layer) picks GDN or self-attention.
  if (rt.config.gdn_layer(layer)) return std::make_unique<GatedDeltaNet>(rt, layer_path + ".gdn", r.gdn_norm_out, layer);
  if (rt.config.model.multi_latent_attention)
    return std::make_unique<MlaAttention>(rt, layer_path + ".attention", r.core_attn, r.mla_up_proj, layer);
  return std::make_unique<SelfAttention>(rt, layer_path + ".attention", r.core_attn, layer);
}

}  // namespace rcts
