#include "reference/memory_model/mla_memory.hpp"

#include "reference/memory_model/checked_math.hpp"

namespace rcts {

std::vector<SavedTensor> mla_attention_memory(const MemoryDims& m, bool core_attn, bool up_proj, bool layernorm) {
  std::vector<SavedTensor> out;
  const int64_t sb = checked_mul(m.s, m.b, "s*b");
  auto add = [&](std::string name, int64_t elements, bool uses_d, std::string base, bool sharded,
                 SaveKind kind = SaveKind::saved) {
    int64_t bytes = checked_mul(elements, uses_d ? m.d : 1, "bytes of " + name);
    if (sharded) bytes /= m.t;  // exact: a % t == 0 (validated)
    out.push_back({std::move(name), bytes, (uses_d ? "d*" : "") + base + (sharded && m.t > 1 ? "/t" : ""), kind});
  };
  const SaveKind up_kind = up_proj ? SaveKind::checkpoint_input : SaveKind::saved;
  const SaveKind qkv_kind = core_attn ? SaveKind::checkpoint_input : SaveKind::saved;
  if (!layernorm) add("attention.linear_kv_down_proj.input", m.sbh(), true, "sbh", false);
  if (m.mla_q_lora_rank > 0) {
    add("attention.q_layernorm.input", checked_mul(sb, m.mla_q_lora_rank, "s*b*qr"), true, "sb*qr", false);
    add("attention.linear_q_up_proj.input", checked_mul(sb, m.mla_q_lora_rank, "s*b*qr"), true, "sb*qr", false,
        up_kind);
  }
  add("attention.kv_layernorm.input", checked_mul(sb, m.mla_kv_lora_rank, "s*b*kvr"), true, "sb*kvr", false);
  add("attention.linear_kv_up_proj.input", checked_mul(sb, m.mla_kv_lora_rank, "s*b*kvr"), true, "sb*kvr", false,
      up_kind);
  if (up_proj) {
    add("attention.k_pos_emb", checked_mul(sb, m.mla_qk_pos_emb_head_dim, "s*b*dr"), true, "sb*dr", false,
        SaveKind::checkpoint_input);
  } else {
    const int64_t dq = m.mla_qk_head_dim + m.mla_qk_pos_emb_head_dim;
    const int64_t qk = checked_product({sb, m.a, dq}, "s*b*a*dq"), v = checked_product({sb, m.a, m.mla_v_head_dim}, "s*b*a*dv");
    add("attention.q", qk, true, "sb*a*dq", true, qkv_kind);
    add("attention.k", qk, true, "sb*a*dq", true, qkv_kind);
    add("attention.v", v, true, "sb*a*dv", true, qkv_kind);
  }
  if (!m.flash && !core_attn) {
    const int64_t s2 = checked_product({m.a, m.s, m.s, m.b}, "a*s^2*b");
    add("attention.softmax.output", s2, true, "as^2b", true);
    if (m.attention_dropout) {
      add("attention.dropout.mask", s2, false, "as^2b", true);
      add("attention.dropout.output", s2, true, "as^2b", true);
    }
  }
  add("attention.proj.input", checked_product({sb, m.a, m.mla_v_head_dim}, "s*b*a*dv"), true, "sb*a*dv", true);
  return out;
}

}  // namespace rcts
