// Saved-tensor profiles: what one dense layer keeps for backward, tensor by tensor (the
// module and op that save it, dtype, shape, bytes, why), on a given platform. The rcts
// reference keeps its own profile, Korthikanti et al.'s tensors (activation_memory.hpp;
// `rcts memory` and rcts's own memory checks use it). A framework's autograd keeps other
// tensors: each row of a profile below names the op, what it saves and the framework
// source that makes it so. Rows are derived from those sources and the program the
// profile describes, never fitted to a measured figure. docs/checks.md, "Saved-tensor
// profiles", lists the rows.
//
// The profiles (their tables are in the files that define them):
//   torch-cpu          the PyTorch adapter's block under PyTorch's CPU autograd
//                      (torch_cpu_profile.cpp)
//   megatron-core-cpu  megatron-core's TransformerLayer, local spec, under PyTorch's CPU
//                      autograd, one or more TP ranks (megatron_cpu_profile.cpp)
// What a recompute keeps instead of a region's saves is each profile's own (its
// framework's checkpoint saves different things); full recompute's layout of chunks is
// the config's and is shared (stage_inventory).
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

struct SavedProfile {
  std::string_view name;       // "torch-cpu"
  std::string_view describes;  // the program and platform
  std::vector<ProfileRow> rows;
  // One layer's tensors in forward order under the selective modules given (empty: none),
  // and a full-recompute chunk's input; null for kReferenceProfile (totals only).
  std::vector<SavedEntry> (*layer)(const SavedProfile&, const Config&, const std::vector<std::string>&) = nullptr;
  std::vector<SavedEntry> (*chunk_input)(const SavedProfile&, const Config&) = nullptr;
  bool tensor_parallel = false;  // models TP > 1 (per rank, without sequence parallelism)
  const ProfileRow& row(std::string_view id) const;  // throws rcts::Error for an unknown id
};

// The profile of the rcts reference: Korthikanti's tensors (activation_memory.hpp).
inline constexpr std::string_view kReferenceProfile = "korthikanti";
// nullptr when `name` is not a profile; kReferenceProfile has no rows here (its
// accounting is layer_memory's).
const SavedProfile* find_profile(std::string_view name);
std::vector<std::string> profile_names();  // kReferenceProfile first

// Bytes per element of a dtype name ("f32" -> 4, "bool" -> 1); 0 when unknown.
int64_t dtype_name_bytes(std::string_view dtype);
std::string shape_text(const std::vector<int64_t>& shape);  // "[16,16]"

// Per layer, this rank's tensors kept for backward in one micro-batch under the config's
// recompute settings, in forward order. Dense, one pipeline stage, no offload; one TP rank
// unless the profile models TP (rcts::Error otherwise, naming what it does not cover).
std::vector<std::vector<SavedEntry>> stage_inventory(const SavedProfile& p, const Config& c);
// Why `p` has no inventory for `c` ("" when it has).
std::string inventory_unmodelled(const SavedProfile& p, const Config& c);

}  // namespace rcts
