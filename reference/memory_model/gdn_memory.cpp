#include "reference/memory_model/gdn_memory.hpp"

#include <algorithm>

#include "reference/memory_model/checked_math.hpp"

namespace rcts {

namespace {
bool has(const std::vector<std::string>& v, const char* x) { return std::find(v.begin(), v.end(), x) != v.end(); }
}  // namespace

std::vector<std::string> dense_modules(const std::vector<std::string>& modules) {
  std::vector<std::string> out;
  for (const auto& n : modules)
    if (n == "core_attn" || n == "mlp" || n == "layernorm") out.push_back(n);
  return out;
}

LayerMemory gdn_layer_memory(const Config& c, const MemoryDims& m, const std::vector<std::string>& selective) {
  std::vector<std::string> dense = dense_modules(selective);
  dense.erase(std::remove(dense.begin(), dense.end(), "core_attn"), dense.end());
  const LayerMemory base = layer_memory(m, dense);
  const bool ln = has(selective, "layernorm"), norm_out = has(selective, "gdn_norm_out");
  const auto& g = c.model;
  const int64_t t = m.t;
  RCTS_CHECK(g.linear_num_key_heads % t == 0 && g.linear_num_value_heads % t == 0,
             "memory model: GDN heads must divide over t = " + std::to_string(t));
  const int64_t sb = checked_mul(m.s, m.b, "s*b");
  const int64_t kq = checked_mul(g.linear_num_key_heads, g.linear_key_head_dim, "Kq") / t;
  const int64_t kv = checked_mul(g.linear_num_value_heads, g.linear_value_head_dim, "Kv") / t;
  const int64_t nv = g.linear_num_value_heads / t;
  auto bytes = [&](int64_t width, const char* what) { return checked_product({m.d, sb, width}, what); };
  const std::string tt = t > 1 ? "/t" : "";
  LayerMemory out;
  bool inserted = false;
  auto insert_gdn = [&] {
    const SaveKind nk = norm_out ? SaveKind::checkpoint_input : SaveKind::saved;
    const int64_t ln1 = checked_mul(m.d, m.sbh(), "d*sbh") / (m.sp ? t : 1);
    if (!ln) out.tensors.push_back({"gdn.in_proj.input", ln1, std::string("d*sbh") + (m.sp ? tt : ""), SaveKind::saved});
    out.tensors.push_back({"gdn.conv_q.input", bytes(kq, "conv_q"), "d*sb*Kq" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.conv_k.input", bytes(kq, "conv_k"), "d*sb*Kq" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.conv_v.input", bytes(kv, "conv_v"), "d*sb*Kv" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.rule.q", bytes(kq, "rule.q"), "d*sb*Kq" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.rule.k", bytes(kq, "rule.k"), "d*sb*Kq" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.rule.v", bytes(kv, "rule.v"), "d*sb*Kv" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.rule.alpha", bytes(nv, "rule.alpha"), "d*sb*nv" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.rule.beta", bytes(nv, "rule.beta"), "d*sb*nv" + tt, SaveKind::saved});
    out.tensors.push_back({"gdn.out_norm.input", bytes(kv, "out_norm.input"), "d*sb*Kv" + tt, nk});
    out.tensors.push_back({"gdn.out_norm.gate", bytes(kv, "out_norm.gate"), "d*sb*Kv" + tt, nk});
    if (!norm_out) out.tensors.push_back({"gdn.out_proj.input", bytes(kv, "out_proj.input"), "d*sb*Kv" + tt, SaveKind::saved});
    inserted = true;
  };
  for (const auto& x : base.tensors) {
    const bool attention = x.name.starts_with("attention.") && !x.name.starts_with("attention.hidden_dropout");
    if (attention) {
      if (!inserted) insert_gdn();
      continue;
    }
    if (!inserted && x.name != "input_layernorm.input") insert_gdn();
    out.tensors.push_back(x);
  }
  return out;
}

LayerMemory layer_memory_of(const Config& c, const MemoryDims& m, int layer, const std::vector<std::string>& selective) {
  if (c.gdn_layer(layer)) return gdn_layer_memory(c, m, selective);
  return layer_memory(m, c.model.gated_delta_net ? dense_modules(selective) : selective);
}

int64_t gdn_selective_layer_worst(const LayerMemory& full, const LayerMemory& kept,
                                  const std::vector<std::string>& modules) {
  const bool norm_out = has(modules, "gdn_norm_out");
  return selective_layer_peak(full, kept.total(), has(modules, "layernorm"), has(modules, "mlp"),
                              full.bytes("gdn.in_proj.input"), norm_out ? full.bytes("gdn.out_proj.input") : 0);
}

}  // namespace rcts
