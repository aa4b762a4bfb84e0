#include "reference/memory_model/offload_memory.hpp"

#include <algorithm>

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
  const int64_t d = static_cast<int64_t>(dtype_size(c.model.activation_dtype));
  for (const auto& [name, layers] : offload_group_layers(c)) {
    // A fine-grained name's last group is its margin and moves nothing; layer-level has none.
    const size_t moving = name == "layer" || layers.empty() ? layers.size() : layers.size() - 1;
    for (size_t k = 0; k < moving; ++k) {
      const auto i = static_cast<size_t>(layers[k]);
      for (const auto& t : st.layers.at(i).tensors)
        if ((name == "layer" || group_of(t.name) == name) && elements(t, d) >= c.offload.min_offloaded_tensor_size)
          out.per_layer[i][name] += t.bytes;
    }
  }
  return out;
}

std::map<std::string, std::vector<int>> offload_group_layers(const Config& c) {
  std::map<std::string, std::vector<int>> out;
  const auto& o = c.offload;
  std::vector<std::string> names = o.fine_grained_activation_offloading ? o.offload_modules : std::vector<std::string>{};
  if (o.cpu_offloading) names.push_back("layer");
  const auto& r = c.recompute;
  const bool full = r.recompute_granularity == "full" && r.recompute_num_layers;
  auto in_checkpoint = [&](int i) { return full && (r.recompute_method == "uniform" || i < *r.recompute_num_layers); };
  // moe_layer_recompute is the deprecated spelling of selective + moe.
  const auto& sel = r.recompute_modules;
  const bool whole_moe = r.moe_layer_recompute || (r.recompute_granularity == "selective" &&
                                                   std::find(sel.begin(), sel.end(), "moe") != sel.end());
  const auto& m = c.model;
  auto moe_layer = [&](int i) { return m.num_moe_experts > 0 && i % m.moe_layer_freq == 0; };
  for (const auto& name : names) {
    auto& layers = out[name];
    if (!c.run.training) continue;
    for (int i = 0; i < m.num_layers; ++i) {
      if (in_checkpoint(i)) continue;
      if (name == "layer") {
        if (i < o.cpu_offloading_num_layers) layers.push_back(i);
      } else if (name == "expert_fc1" || name == "moe_act") {
        if (moe_layer(i) && m.moe_grouped_gemm && !whole_moe) layers.push_back(i);
      } else if (c.gdn_layer(i) && name != "mlp_norm") {
        // A GDN layer opens no attention group, and no attn_norm: Megatron-LM's GDN spec
        // fuses its input norm into in_proj (design §15).
        continue;
      } else {
        layers.push_back(i);
      }
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
