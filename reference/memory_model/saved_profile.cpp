// The profiles' registry, the shared parts of their layer models, and the layout of a
// stage's layers under recompute (the table of each profile is in its own file).
#include "reference/memory_model/saved_profile.hpp"

#include <algorithm>

#include "reference/config/validate.hpp"
#include "reference/core/error.hpp"
#include "reference/memory_model/checked_math.hpp"
#include "reference/memory_model/profile_entries.hpp"

namespace rcts {
namespace profile_detail {

Sizes::Sizes(const Config& c)
    : s(c.model.seq_length),
      b(c.model.micro_batch_size),
      h(c.model.hidden_size),
      a(c.model.num_attention_heads),
      F(c.model.ffn_hidden_size),
      tp(c.parallel.tensor_model_parallel_size),
      act(dtype_name(c.model.activation_dtype)) {}

void Entries::add(std::string module, std::string_view row, std::string tensor, std::string dtype,
                  std::vector<int64_t> shape) {
  const ProfileRow& r = p_.row(row);
  int64_t bytes = dtype_name_bytes(dtype);
  for (int64_t d : shape) bytes = checked_mul(bytes, d, "bytes of " + module + "." + tensor);
  out_.push_back({std::move(module), std::string(r.op), std::move(tensor), std::move(dtype), std::move(shape), bytes,
                  std::string(r.id)});
}

bool has(const std::vector<std::string>& modules, std::string_view m) {
  return std::find(modules.begin(), modules.end(), m) != modules.end();
}

}  // namespace profile_detail

namespace {

const SavedProfile& reference() {
  static const SavedProfile p{kReferenceProfile,
                              "rcts's reference layer: Korthikanti et al. 2022's tensors "
                              "(reference/memory_model/activation_memory.hpp)",
                              {}};
  return p;
}

const std::vector<const SavedProfile*>& all() {
  static const std::vector<const SavedProfile*> v{&reference(), &profile_detail::torch_cpu(),
                                                  &profile_detail::megatron_core_cpu()};
  return v;
}

}  // namespace

const ProfileRow& SavedProfile::row(std::string_view id) const {
  for (const auto& r : rows)
    if (r.id == id) return r;
  throw Error("saved-tensor profile " + std::string(name) + " has no row '" + std::string(id) + "'");
}

const SavedProfile* find_profile(std::string_view name) {
  for (const SavedProfile* p : all())
    if (p->name == name) return p;
  return nullptr;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> out;
  for (const SavedProfile* p : all()) out.emplace_back(p->name);
  return out;
}

int64_t dtype_name_bytes(std::string_view dtype) {
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "bf16" || dtype == "f16") return 2;
  if (dtype == "bool" || dtype == "u8") return 1;
  return 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string inventory_unmodelled(const SavedProfile& p, const Config& c) {
  if (p.rows.empty()) return "profile " + std::string(p.name) + " is rcts's own accounting (totals only)";
  if (c.model.num_moe_experts > 0 || c.model.multi_latent_attention || c.model.gated_delta_net ||
      c.model.flash_attention)
    return "profile " + std::string(p.name) + " covers dense layers without flash attention only";
  if (c.parallel.pipeline_model_parallel_size > 1)
    return "profile " + std::string(p.name) + " covers one pipeline stage only";
  if (c.parallel.tensor_model_parallel_size > 1 && (!p.tensor_parallel || c.parallel.sequence_parallel))
    return "profile " + std::string(p.name) + (p.tensor_parallel ? " covers tensor parallelism without sequence parallelism"
                                                                 : " covers one tensor-parallel rank only");
  if (c.offload.fine_grained_activation_offloading || c.offload.cpu_offloading)
    return "offload moves saved tensors to the host; the profile has no offload rows";
  return "";
}

std::vector<std::vector<SavedEntry>> stage_inventory(const SavedProfile& p, const Config& c) {
  validate_or_throw(c, "saved-tensor profile");
  if (const std::string why = inventory_unmodelled(p, c); !why.empty()) throw Error("saved-tensor profile: " + why);
  const RecomputeConfig r = effective_recompute(c.recompute);
  const int L = c.model.num_layers;
  std::vector<std::vector<SavedEntry>> out(static_cast<size_t>(L));
  if (!c.run.training) return out;  // nothing is saved for a backward that never runs
  if (r.recompute_granularity == "full") {
    const int n = *r.recompute_num_layers;
    for (int i = 0; i < L; ++i) {
      const bool uniform = r.recompute_method == "uniform";
      if (uniform ? i % n == 0 : i < n) out[static_cast<size_t>(i)] = p.chunk_input(p, c);
      else if (!uniform) out[static_cast<size_t>(i)] = p.layer(p, c, {});
    }
    return out;
  }
  const auto modules = r.recompute_granularity == "selective" ? r.recompute_modules : std::vector<std::string>{};
  for (const auto& name : modules)
    RCTS_CHECK(name == "core_attn" || name == "mlp" || name == "layernorm",
               "saved-tensor profile " + std::string(p.name) + ": recompute module '" + name + "' is not modelled");
  for (int i = 0; i < L; ++i) out[static_cast<size_t>(i)] = p.layer(p, c, modules);
  return out;
}

}  // namespace rcts
