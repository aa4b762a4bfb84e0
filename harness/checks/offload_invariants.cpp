#include "harness/checks/offload_invariants.hpp"

#include <algorithm>
#include <set>

#include "reference/memory_model/offload_memory.hpp"

namespace rcts::harness {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string key(const std::string& name, int layer) { return name + "@" + std::to_string(layer); }

// The margin of a fine-grained name is its last group in forward order (its backward
// runs first); layer-level groups have none.
bool is_margin(const std::string& name, const std::vector<int>& layers, int layer) {
  return name != "layer" && !layers.empty() && layer == layers.back();
}

OffloadGroupStats stats_of(const OffloadReport& r, const std::string& k) {
  auto it = r.by_group.find(k);
  return it == r.by_group.end() ? OffloadGroupStats{} : it->second;
}

}  // namespace

std::optional<std::string> warmup_moved_nothing(const RunRecord& without_offload, const RunRecord& run) {
  const OffloadReport& r = *run.offload;
  if (!r.host_pool_allocations.empty() && r.host_pool_allocations[0] != 0)
    return "the warmup micro-batch allocated " + std::to_string(r.host_pool_allocations[0]) +
           " host buffers; warmup records groups and moves nothing (design §9)";
  if (!run.host_resident_after_forward.empty() && run.host_resident_after_forward[0] != 0)
    return "at the end of the warmup forward " + std::to_string(run.host_resident_after_forward[0]) +
           " bytes sat on the host; warmup moves nothing (design §9)";
  if (!run.saved_after_forward.empty() && !without_offload.saved_after_forward.empty() &&
      run.saved_after_forward[0] != without_offload.saved_after_forward[0])
    return "at the end of the warmup forward the device held " + std::to_string(run.saved_after_forward[0]) +
           " bytes, " + std::to_string(without_offload.saved_after_forward[0]) +
           " without offload; warmup moves nothing (design §9)";
  return std::nullopt;
}

std::optional<std::string> groups_moved_their_bytes(const RunRecord& run) {
  const OffloadReport& r = *run.offload;
  const int after_warmup = r.iterations - 1;
  struct Seen {
    int tensors = 0;
    std::map<uint64_t, int64_t> marked;  // storage -> bytes, of the tensors marked for offload
  };
  std::map<std::string, Seen> seen;
  for (const auto& t : r.tensors) {
    Seen& s = seen[t.group];
    ++s.tensors;
    if (t.offloaded) s.marked[t.storage] = t.storage_bytes;
  }
  const auto expected = offload_group_layers(run.config);
  std::set<std::string> keys;
  for (const auto& [name, layers] : expected) {
    if (layers.empty())
      return "offload module '" + name + "' is configured but this configuration forms no group of it " +
             "(layers inside a full-recompute checkpoint or a recomputed MoE layer save nothing; expert groups "
             "need grouped GEMM MoE layers)";
    for (int l : layers) {
      const std::string k = key(name, l);
      keys.insert(k);
      const OffloadGroupStats st = stats_of(r, k);
      if (st.groups != after_warmup)
        return "group " + k + " committed " + std::to_string(st.groups) + " times in the " +
               std::to_string(after_warmup) + " micro-batches after warmup; design §9 forms it in every one "
               "(a group skipped?)";
      if (seen[k].tensors == 0) return "group " + k + " saw no saved tensor (were its saved-tensor hooks active?)";
      if (is_margin(name, layers, l)) {
        if (st.margin_groups != after_warmup || st.offloaded_bytes != 0)
          return "group " + k + " is the first of '" + name + "' in backward, the margin: it must stay on device "
                 "in every micro-batch, but it was kept " + std::to_string(st.margin_groups) + " of " +
                 std::to_string(after_warmup) + " times and moved " + std::to_string(st.offloaded_bytes) + " bytes";
        continue;
      }
      if (st.margin_groups != 0)
        return "group " + k + " was kept on device as a margin; the margin of '" + name + "' is " +
               key(name, layers.back()) + " alone";
      int64_t eligible = 0;
      for (const auto& [storage, bytes] : seen[k].marked) eligible += bytes;
      if (st.offloaded_bytes != eligible)
        return "group " + k + " moved " + std::to_string(st.offloaded_bytes) + " bytes, but the tensors it marked "
               "for offload hold " + std::to_string(eligible) + " bytes (distinct storages, " +
               std::to_string(after_warmup) + " micro-batches)";
      if (st.reloaded_bytes != st.offloaded_bytes)
        return "group " + k + " offloaded " + std::to_string(st.offloaded_bytes) + " bytes but reloaded " +
               std::to_string(st.reloaded_bytes);
    }
  }
  for (const auto& [k, st] : r.by_group)
    if (!keys.count(k)) return "group " + k + " was formed, but design §9 forms no such group in this configuration";
  return std::nullopt;
}

bool recomputed_by_output_discarding(const Config& c, const std::string& producer) {
  const auto& r = c.recompute;
  if (!c.run.training || r.recompute_granularity != "selective") return false;
  auto ends_with = [&](const std::string& tail) {
    return producer.size() >= tail.size() && producer.compare(producer.size() - tail.size(), tail.size(), tail) == 0;
  };
  const bool norm = ends_with(".input_layernorm.output") || ends_with(".pre_mlp_layernorm.output");
  const bool expert_act = producer.find(".moe.experts") != std::string::npos &&
                          (ends_with(".act.output") || ends_with(".dropout.output"));
  // MLA's up-projection outputs q, k, v (mla_up_proj, design §14).
  const bool mla_qkv = c.model.multi_latent_attention &&
                       (ends_with(".attention.q") || ends_with(".attention.k") || ends_with(".attention.v"));
  return (norm && contains(r.recompute_modules, "layernorm")) || (expert_act && contains(r.recompute_modules, "moe_act")) ||
         (mla_qkv && contains(r.recompute_modules, "mla_up_proj"));
}

std::optional<std::string> idle_modules_only_recomputed(const RunRecord& run) {
  const OffloadReport& r = *run.offload;
  std::set<std::string> params;
  for (const auto& p : run.params) params.insert(p.name);
  for (const auto& t : r.tensors) {
    if (t.kept_because == "recomputed" && !recomputed_by_output_discarding(run.config, t.storage_name))
      return t.tensor + " of group " + t.group + " was kept on device as recomputed, but its storage '" +
             t.storage_name + "' is no output an output-discarding recompute of this configuration rebuilds "
             "(selective layernorm: the norms' outputs; moe_act: the expert activation's; mla_up_proj: MLA's q, k, "
             "v)";
    if (t.kept_because == "parameter" && !params.count(t.storage_name))
      return t.tensor + " of group " + t.group + " was kept on device as a parameter, but its storage '" +
             t.storage_name + "' is no parameter of the model";
  }
  for (const auto& [name, layers] : offload_group_layers(run.config)) {
    std::set<std::string> groups;
    int64_t moved = 0;
    for (int l : layers)
      if (!is_margin(name, layers, l)) {
        groups.insert(key(name, l));
        moved += stats_of(r, key(name, l)).offloaded_bytes;
      }
    if (groups.empty() && !layers.empty())
      return "offload module '" + name + "' forms only its margin group " + key(name, layers.back()) +
             ", which stays on device: nothing of it can move";
    if (moved > 0) continue;
    for (const auto& t : r.tensors)
      if (groups.count(t.group) && t.kept_because != "recomputed" && t.kept_because != "parameter")
        return "offload module '" + name + "' moved no bytes after warmup, yet " + t.tensor + " (" +
               std::to_string(t.numel) + " elements) of group " + t.group + " was " +
               (t.offloaded ? std::string("marked for offload") : "kept on device (" + t.kept_because + ")") +
               "; a module may stay idle only when everything it saves is a parameter or recomputed";
  }
  return std::nullopt;
}

}  // namespace rcts::harness
