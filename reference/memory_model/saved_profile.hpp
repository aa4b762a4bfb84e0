// Saved-tensor profiles: what one dense layer keeps for backward, tensor by tensor (the
// module and op that save it, dtype, shape, bytes, why), on a given platform. The rcts
// reference keeps its own profile, Korthikanti et al.'s tensors (activation_memory.hpp;
// `rcts memory` and rcts's own memory checks use it). A framework's autograd keeps other
// tensors: each row of a profile below names the op, what it saves and the framework
// source that makes it so. Rows are derived from those sources and the program the
// profile describes, never fitted to a measured figure. docs/checks.md, "Saved-tensor
// profiles", lists the rows.
//
// torch-cpu: the PyTorch adapter's block (adapters/pytorch/rcts_pytorch/model.py) under
// PyTorch's CPU autograd. Every op computes in f32: `x.float()` is the tensor itself for
// f32 activations and an f32 copy otherwise, so the tensors an op keeps are f32
// whatever the activation dtype. T = s·b tokens, B = b·a, dh = h/a, F = ffn:
//   input_layernorm    native_layer_norm  input f32 [T,h], mean f32 [T,1], rstd f32 [T,1]
//   attention.qkv      addmm              mat1 (the LN output) f32 [T,h]
//   attention.core     bmm (q k^T)        self f32 [B,s,dh], mat2 f32 [B,dh,s]
//                      masked_fill        the causal mask, bool [s,s]
//                      _softmax           result f32 [b,a,s,s]
//                      native_dropout     mask, bool [b,a,s,s]       attention_dropout > 0
//                      bmm (probs v)      self f32 [B,s,s] (not when f32 activations and no
//                                         attention dropout: then it is the softmax result),
//                                         mat2 f32 [B,s,dh]
//   attention.proj     addmm              mat1 f32 [T,h]
//   attention.hidden_dropout  native_dropout  mask bool [T,h]          hidden_dropout > 0
//   pre_mlp_layernorm  native_layer_norm  as input_layernorm
//   mlp.fc1            addmm              mat1 f32 [T,h]
//   mlp.act            gelu               self f32 [T,F]; SwiGLU: silu self (gate) f32
//                                         [T,F], mul self (silu out) and other (up) f32 [T,F]
//   mlp.fc2            addmm              mat1 f32 [T,F]
//   mlp.hidden_dropout native_dropout     mask bool [T,h]              hidden_dropout > 0
// Parameters (weights, biases, W^T views) are not activations and are not counted.
// Recompute: torch.utils.checkpoint keeps the region's input (activation dtype) and
// none of the region's saves: a full-recompute chunk keeps its input at its first layer
// and nothing else; selective core_attn keeps qkv's output [T,3h] instead of the
// attention.core rows, mlp the LN2 output [T,h] instead of the mlp rows, layernorm each
// LN's input [T,h] instead of its three rows. Eval saves nothing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/config/config.hpp"

namespace rcts {

// One row of a profile: what one op keeps, and the source that says so.
struct ProfileRow {
  std::string_view id;      // e.g. "layernorm.rstd"
  std::string_view op;      // e.g. "aten::native_layer_norm"
  std::string_view keeps;   // e.g. "rstd, f32 [T,1]"
  std::string_view source;  // the framework file (and the program file) that make it so
};

struct SavedProfile {
  std::string_view name;       // "torch-cpu"
  std::string_view describes;  // the program and platform
  std::vector<ProfileRow> rows;
  const ProfileRow& row(std::string_view id) const;  // throws rcts::Error for an unknown id
};

// The profile of the rcts reference: Korthikanti's tensors (activation_memory.hpp).
inline constexpr std::string_view kReferenceProfile = "korthikanti";
// nullptr when `name` is not a profile; kReferenceProfile has no rows here (its
// accounting is layer_memory's).
const SavedProfile* find_profile(std::string_view name);
std::vector<std::string> profile_names();  // kReferenceProfile first

// One tensor the model says a layer keeps.
struct SavedEntry {
  std::string module;  // below the layer, e.g. "input_layernorm"
  std::string op;      // "aten::native_layer_norm", "torch.utils.checkpoint"
  std::string tensor;  // "rstd"
  std::string dtype;   // "f32", "bf16", "f64", "bool", "u8", "i64"
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  std::string row;     // the profile row's id
};

// Bytes per element of a dtype name ("f32" -> 4, "bool" -> 1); 0 when unknown.
int64_t dtype_name_bytes(std::string_view dtype);
std::string shape_text(const std::vector<int64_t>& shape);  // "[16,16]"

// Per layer of pipeline stage pp_rank: the tensors kept for backward in one micro-batch
// under the config's recompute settings, in forward order. Dense, single-rank, no
// offload (rcts::Error otherwise, naming what the profile does not cover).
std::vector<std::vector<SavedEntry>> stage_inventory(const SavedProfile& p, const Config& c);
// Why `p` has no inventory for `c` ("" when it has).
std::string inventory_unmodelled(const SavedProfile& p, const Config& c);

}  // namespace rcts
