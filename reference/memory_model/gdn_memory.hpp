// Analytic activation memory of a gated delta net layer (design §15), tensor by tensor
// as the reference's GatedDeltaNet saves them, per TP rank and micro-batch. With
// Kq = linear_num_key_heads·linear_key_head_dim, Kv = linear_num_value_heads·
// linear_value_head_dim, nv = linear_num_value_heads, all /t on a TP rank:
//   input_layernorm.input      d·sbh        (as a dense layer; /t under SP)
//   gdn.in_proj.input          d·sbh        LN1 output (released by layernorm recompute)
//   gdn.conv_q.input, .conv_k.input  d·sb·Kq each   the conv inputs (q, k pre-conv)
//   gdn.conv_v.input           d·sb·Kv
//   gdn.rule.q, gdn.rule.k     d·sb·Kq each   conv outputs the delta rule reads
//   gdn.rule.v                 d·sb·Kv
//   gdn.rule.alpha, .beta      d·sb·nv each   raw decay / write-strength inputs
//   gdn.out_norm.input         d·sb·Kv      the rule output (checkpoint input under gdn_norm_out)
//   gdn.out_norm.gate          d·sb·Kv      z (checkpoint input under gdn_norm_out)
//   gdn.out_proj.input         d·sb·Kv      the gated norm output (gone under gdn_norm_out)
//   then the hidden-dropout mask, pre_mlp_layernorm and the MLP exactly as a dense layer.
// The recurrence saves no state: its backward recomputes S_0..S_s in op scratch
// (workspace, not saved activations), as FLA's chunked kernel does.
// Backward peak of a selectively recomputed GDN layer: the dense rule with the s²
// tensors replaced by gdn.out_proj.input (what gdn_norm_out brings back).
#pragma once
#include "reference/memory_model/activation_memory.hpp"

namespace rcts {

// The saved tensors of layer `layer` of `c`: a GDN layer's list or the dense one.
// `selective` may hold any module name; the ones that do not apply to the layer's
// kind are ignored (gdn_norm_out on attention layers, core_attn on GDN layers).
LayerMemory layer_memory_of(const Config& c, const MemoryDims& m, int layer, const std::vector<std::string>& selective);
// A GDN layer's saved tensors.
LayerMemory gdn_layer_memory(const Config& c, const MemoryDims& m, const std::vector<std::string>& selective);
// The worst moment of a selectively recomputed GDN layer's backward (`full`: without
// recompute, `kept`: with `modules`).
int64_t gdn_selective_layer_worst(const LayerMemory& full, const LayerMemory& kept,
                                  const std::vector<std::string>& modules);
// The dense selective modules of a module list (core_attn, mlp, layernorm).
std::vector<std::string> dense_modules(const std::vector<std::string>& modules);

}  // namespace rcts
