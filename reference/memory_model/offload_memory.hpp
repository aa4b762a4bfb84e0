// The offloaded share of the analytic activation model (design §9): per layer, the bytes
// that offload moves to the host in each micro-batch after warmup, so that the device
// keeps a layer's saved bytes (activation_memory.hpp) minus its share once the layer's
// forward ended. Tensor by tensor from the layer's saved list, by the group that saves it:
//   attn_norm   input_layernorm.input (the residual; not on GDN layers, whose input norm
//               Megatron-LM fuses into in_proj, design §15)
//   qkv_linear  attention.qkv.input (dense); MLA (design §14): the down-projections'
//               input, q_layernorm's and kv_layernorm's inputs, both up-projections'
//               inputs and, under mla_up_proj, k_pos_emb
//   core_attn   attention.q / .k / .v and the s² tensors
//   attn_proj   attention.proj.input
//   mlp_norm    pre_mlp_layernorm.input
//   layer       (cpu_offloading) every tensor of the first cpu_offloading_num_layers layers
// A tensor moves when it has at least min_offloaded_tensor_size ELEMENTS; what a recompute
// rebuilds is not in the saved list, so never moves. A group forms on every trained layer
// outside a full-recompute checkpoint; the last layer forming a fine-grained name is its
// margin and moves nothing. Dense q, k and v are views of one storage, so their sum is
// that storage's bytes, the offload unit. MoE layers are outside the model, as in
// activation_memory.hpp.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reference/memory_model/activation_memory.hpp"

namespace rcts {

struct OffloadShare {
  std::vector<std::map<std::string, int64_t>> per_layer;  // group name -> bytes moved, per stage layer
  int64_t layer_bytes(size_t layer) const;
};

// The share of each layer of `st` = stage_memory(c) (one pipeline stage: offload excludes
// pipeline parallelism). Empty maps when nothing moves (no offload, eval).
OffloadShare offload_share(const Config& c, const StageMemory& st);

// Offload group name -> the layers (increasing) that form that group in every
// micro-batch after warmup. Fine-grained: attn_norm, qkv_linear, core_attn,
// attn_proj and mlp_norm in every layer (only mlp_norm in a GDN layer, design §15); expert_fc1 and moe_act in MoE layers
// (layer % moe_layer_freq == 0) with grouped GEMM, unless selective "moe" checkpoints
// the whole MoE layer; layer-level "layer" in the first cpu_offloading_num_layers
// layers. Layers inside a full-recompute checkpoint (uniform: all; block N: the first
// N) form none: their forward saves nothing (design §6). Eval forms none.
std::map<std::string, std::vector<int>> offload_group_layers(const Config& c);
// Why the share is not what a run of `c` leaves on the device at the end of each layer's
// forward ("" when it is): timed copy streams release the device bytes when the copy
// completes, not at the commit point.
std::string offload_share_unmodelled(const Config& c);

}  // namespace rcts
