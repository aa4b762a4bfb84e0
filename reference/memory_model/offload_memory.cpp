#include "reference/memory_model/offload_memory.hpp"

#include "reference/memory_model/checked_math.hpp"

namespace rcts {
namespace {

// The fine-grained group whose scope saves `tensor` on an attention or GDN layer ("" for
// none: the masks and the MLP are in no group, GDN's own tensors neither).
std::string group_of(const std::string& tensor) {
  static const std::map<std::string, std::string> exact = {
      {"input_layernorm.input", "attn_norm"},
      {"pre_mlp_layernorm.input", "mlp_norm"},
      {"attention.qkv.input", "qkv_linear"},
      {"attention.linear_kv_down_proj.input", "qkv_linear"},
      {"attention.q_layernorm.input", "qkv_linear"},
      {"attention.linear_q_up_proj.input", "qkv_linear"},
      {"attention.kv_layernorm.input", "qkv_linear"},
      {"attention.linear_kv_up_proj.input", "qkv_linear"},
      {"attention.k_pos_emb", "qkv_linear"},
      {"attention.q", "core_attn"},
      {"attention.k", "core_attn"},
      {"attention.v", "core_attn"},
      {"attention.proj.input", "attn_proj"},
  };
  if (auto it = exact.find(tensor); it != exact.end()) return it->second;
  if (tensor.starts_with("attention.softmax.") || tensor.starts_with("attention.dropout.")) return "core_attn";
  return "";
}

// A tensor's elements (the threshold counts elements): the formula's leading factor is
// its element size, d for activations, 4 for the fused attention's f32 stats, none for
// 1-byte masks.
int64_t elements(const SavedTensor& t, int64_t d) {
  if (t.formula.starts_with("d*")) return t.bytes / d;
  if (t.formula.starts_with("4*")) return t.bytes / 4;
  return t.bytes;
}

bool in_full_checkpoint(const Config& c, int layer) {
  const auto& r = c.recompute;
  if (r.recompute_granularity != "full" || !r.recompute_num_layers) return false;
  return r.recompute_method == "uniform" || layer < *r.recompute_num_layers;
}

// Whether `layer` forms a group of fine-grained `name`.
bool forms(const Config& c, const std::string& name, int layer) {
  if (in_full_checkpoint(c, layer)) return false;
  if (c.gdn_layer(layer)) return name == "mlp_norm";
  return true;
}

}  // namespace

int64_t OffloadShare::layer_bytes(size_t layer) const {
  int64_t n = 0;
  if (layer < per_layer.size())
    for (const auto& [name, bytes] : per_layer[layer]) n = checked_add(n, bytes, "offloaded bytes");
  return n;
}

OffloadShare offload_share(const Config& c, const StageMemory& st) {
  OffloadShare out;
  out.per_layer.resize(st.layers.size());
  const auto& o = c.offload;
  if (!c.run.training) return out;
  const int64_t d = static_cast<int64_t>(dtype_size(c.model.activation_dtype));
  const int L = static_cast<int>(st.layers.size());
  auto moves = [&](const SavedTensor& t) { return elements(t, d) >= o.min_offloaded_tensor_size; };
  if (o.cpu_offloading) {
    for (int i = 0; i < L && i < o.cpu_offloading_num_layers; ++i) {
      if (in_full_checkpoint(c, i)) continue;
      for (const auto& t : st.layers[static_cast<size_t>(i)].tensors)
        if (moves(t)) out.per_layer[static_cast<size_t>(i)]["layer"] += t.bytes;
    }
    return out;
  }
  if (!o.fine_grained_activation_offloading) return out;
  for (const auto& name : o.offload_modules) {
    int margin = -1;
    for (int i = 0; i < L; ++i)
      if (forms(c, name, i)) margin = i;
    for (int i = 0; i < margin; ++i) {
      if (!forms(c, name, i)) continue;
      for (const auto& t : st.layers[static_cast<size_t>(i)].tensors)
        if (group_of(t.name) == name && moves(t)) out.per_layer[static_cast<size_t>(i)][name] += t.bytes;
    }
  }
  return out;
}

std::string offload_share_unmodelled(const Config& c) {
  const auto& o = c.offload;
  if (o.link_bandwidth_gbps > 0)
    return "timed copy streams (offload.link_bandwidth_gbps) release device bytes when a copy completes";
  return "";
}

}  // namespace rcts
