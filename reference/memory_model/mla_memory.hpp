// The attention part of a multi-latent-attention layer's saved tensors (design §14),
// matched tensor by tensor to what reference/modules/mla_attention.cpp saves; the
// rest of the layer (layernorm inputs, MLP, masks) is the dense layer's. sb = s·b,
// d = activation bytes, n·t = a heads, dq = qk_head_dim + qk_pos_emb_head_dim:
//   attention.linear_kv_down_proj.input  d·sbh      LN1 output (also q_down's or q_proj's
//                                                   input: one tensor); gone under layernorm
//   attention.q_layernorm.input          d·sb·qr    q_lora_rank > 0 (replicated)
//   attention.linear_q_up_proj.input     d·sb·qr    q_lora_rank > 0; a checkpoint input
//                                                   under mla_up_proj
//   attention.kv_layernorm.input         d·sb·kvr   the latent (replicated)
//   attention.linear_kv_up_proj.input    d·sb·kvr   the normed latent; checkpoint input
//                                                   under mla_up_proj
//   attention.k_pos_emb                  d·sb·dr    only under mla_up_proj (checkpoint
//                                                   input; without it RoPE's backward
//                                                   needs only the table)
//   attention.q / .k                     d·sb·a·dq/t  each; gone under mla_up_proj
//   attention.v                          d·sb·a·dv/t  gone under mla_up_proj
//   s² tensors                           as dense, /t  gone under core_attn
//   attention.proj.input                 d·sb·a·dv/t
// Backward peak: the dense derivation, plus q, k, v again while the attention branch's
// backward runs when mla_up_proj released them (recomputed before core attention).
#pragma once
#include <vector>

#include "reference/memory_model/activation_memory.hpp"

namespace rcts {

std::vector<SavedTensor> mla_attention_memory(const MemoryDims& m, bool core_attn, bool up_proj, bool layernorm);

}  // namespace rcts
