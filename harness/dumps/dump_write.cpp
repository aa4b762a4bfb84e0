// Dump format 1's writer: a RunRecord as dump.json and one .npy per tensor
// (docs/dump-format.md). Every field written here is read back by dump_read.cpp; the
// round-trip tests (tests/harness/run/dump_v1_test.cpp) keep the two in step.
#include "harness/dumps/dump_v1.hpp"

#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/dumps/dump_format.hpp"
#include "harness/io/atomic_file.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/hex_bits.hpp"
#include "harness/io/npy.hpp"
#include "harness/io/safe_name.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/memory.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace dump_detail;

namespace {

// The layouts rcts uses, repeated in every dump so a reader needs nothing else.
const json& layouts() {
  static const json l = {
      {"tokens", "activations are (s*b, h) row-major with row = s_index * b + b_index (Megatron's [s, b, h])"},
      {"linear_weight", "(out_features, in_features): y = x W^T + bias, as torch.nn.Linear"},
      {"qkv_rows", "attention.qkv output columns [q | k | v], each h wide and head-major inside (head * d + j); "
                   "Megatron-LM interleaves per head ([head][q, k, v][d]): permute rows to convert"},
      {"fc1_swiglu", "with swiglu, mlp.fc1 output columns [gate | up]: out = silu(gate) * up (Megatron's order)"},
      {"attention_mask", "(b, heads, s_query, s_key), the layout of the softmax probabilities"},
      {"hidden_mask", "(s*b, h) in token order, like the activations"},
      {"mask_values", "u8, 1 keep / 0 drop; kept values are scaled by 1 / (1 - p)"},
      {"bf16", "stored as '<u2' raw bits; dtype 'bf16' in the manifest"}};
  return l;
}

// Writes each tensor of the run to its own .npy in the dump directory (file names made
// unique) and gives back its manifest entry.
class Writer {
 public:
  explicit Writer(fs::path dir) : dir_(std::move(dir)) {}

  json tensor(const Tensor& t, const std::string& stem) {
    RCTS_CHECK(t.defined(), "dump " + dir_.string() + ": tensor '" + stem + "' is undefined");
    std::string file = safe_file_stem(stem).substr(0, 200) + ".npy";
    for (int n = 2; !used_.insert(file).second; ++n) file = safe_file_stem(stem).substr(0, 200) + "-" + std::to_string(n) + ".npy";
    write_npy(dir_ / file, t);
    return {{"file", file},
            {"dtype", std::string(dtype_name(t.dtype()))},
            {"shape", t.shape()},
            {"sha256", sha256_hex(t.numel() ? t.bytes() : nullptr, static_cast<size_t>(t.nbytes()))}};
  }

  json named(const std::vector<NamedTensor>& list, const std::string& prefix, bool with_megatron) {
    json out = json::array();
    for (const auto& n : list) {
      json e = tensor(n.tensor, prefix + n.name);
      e["name"] = n.name;
      if (with_megatron)
        if (const std::string m = megatron_name(n.name); !m.empty()) e["megatron_name"] = m;
      out.push_back(std::move(e));
    }
    return out;
  }

 private:
  fs::path dir_;
  std::set<std::string> used_;
};

json state_json(const GeneratorState& s) { return {{"seed", s.seed}, {"offset", s.offset}}; }

json states_json(const RngStates& s) {
  json tracker = json::object();
  for (const auto& [name, st] : s.tracker) tracker[name] = state_json(st);
  return {{"host", state_json(s.host)}, {"device", state_json(s.device)}, {"tracker", tracker},
          {"active_forks", s.active_forks}};
}

json save_json(const SaveRecord& s) {
  return {{"module", s.module_path},     {"tensor", s.tensor},       {"bytes", s.bytes},
          {"category", std::string(category_name(s.category))}, {"storage", s.storage_id}, {"offset", s.offset},
          {"recompute", s.recompute}};
}

json offload_json(const OffloadReport& r) {
  auto stats = [](const std::map<std::string, OffloadGroupStats>& m) {
    json o = json::object();
    for (const auto& [k, s] : m)
      o[k] = {{"offloaded_bytes", s.offloaded_bytes}, {"reloaded_bytes", s.reloaded_bytes},
              {"kept_bytes", s.kept_bytes},           {"groups", s.groups},
              {"margin_groups", s.margin_groups}};
    return o;
  };
  json tensors = json::array();
  for (const auto& t : r.tensors)
    tensors.push_back({{"group", t.group},
                       {"tensor", t.tensor},
                       {"numel", t.numel},
                       {"offloaded", t.offloaded},
                       {"kept_because", t.kept_because},
                       {"storage", t.storage},
                       {"storage_bytes", t.storage_bytes},
                       {"storage_name", t.storage_name}});
  return {{"by_name", stats(r.by_name)},
          {"by_group", stats(r.by_group)},
          {"tensors", tensors},
          {"margin_groups", r.margin_groups},
          {"host_pool_allocations", r.host_pool_allocations},
          {"exposed_wait_s", r.exposed_wait_s},
          {"iterations", r.iterations}};
}

// The manifest's "micro_batches": per (step, micro-batch) its loss, tensors, RNG states
// and the memory figures the run recorded; tensors go to files through `w`.
json micro_batches_json(const RunRecord& r, Writer& w) {
  const int n = r.micro_batches_total();
  const int per = r.config.run.micro_batches;
  json mbs = json::array();
  for (int i = 0; i < n; ++i) {
    const int step = i / per, mb = i % per;
    const std::string stem = mb_stem(step, mb);
    json e = {{"step", step},
              {"micro_batch", mb},
              {"loss", {{"value", r.losses[i]}, {"bits", double_hex_bits(r.losses[i])}}},
              {"input", w.tensor(r.inputs[i], stem + ".input")},
              {"target", w.tensor(r.targets[i], stem + ".target")},
              {"output", w.tensor(r.outputs[i], stem + ".output")},
              {"input_grad", r.input_grads[i].defined() ? w.tensor(r.input_grads[i], stem + ".input_grad") : json()},
              {"param_grads", w.named(r.grads_after_micro_batch.at(i), stem + ".grad.", false)},
              {"saved_bytes_per_layer", r.saved_bytes_per_layer.at(i)}};
    if (r.seed_offset_rng) e["rng_after"] = states_json(r.rng_after.at(i));
    else e["rng_after"] = {{"opaque", r.rng_after_opaque.at(i)}};
    if (i < static_cast<int>(r.saves_per_micro_batch.size())) {
      json saves = json::array();
      for (const auto& s : r.saves_per_micro_batch[i]) saves.push_back(save_json(s));
      e["saved_tensors"] = saves;
    }
    if (i < static_cast<int>(r.saved_peaks.size())) e["saved_peak"] = r.saved_peaks[i];
    if (i < static_cast<int>(r.saved_after_forward.size())) {
      e["saved_after_forward"] = r.saved_after_forward[i];
      e["host_resident_after_forward"] = r.host_resident_after_forward.at(i);
    }
    if (i < static_cast<int>(r.offloaded_bytes.size())) {
      e["offloaded_bytes"] = r.offloaded_bytes[i];
      e["reloaded_bytes"] = r.reloaded_bytes.at(i);
    }
    mbs.push_back(std::move(e));
  }
  return mbs;
}

// The manifest's "steps": parameters before and gradients of each step.
json steps_json(const RunRecord& r, Writer& w) {
  const int steps = r.config.run.steps;
  json step_list = json::array();
  for (int s = 0; s < steps; ++s)
    step_list.push_back({{"step", s},
                         {"params_before", w.named(r.params_before_step[s], "s" + std::to_string(s) + ".param.", true)},
                         {"grads", w.named(r.grads_of_step[s], "s" + std::to_string(s) + ".grad.", false)}});
  return step_list;
}

// The manifest's "masks": every dropout draw with its bytes (and seed and offset when
// the states are seed-offset).
json masks_json(const RunRecord& r, Writer& w, const fs::path& dir) {
  json masks = json::array();
  for (size_t k = 0; k < r.masks.size(); ++k) {
    const MaskRecord& m = r.masks[k];
    RCTS_CHECK(m.mask.defined(), "dump " + dir.string() + ": mask " + std::to_string(k) + " of " + m.site +
                                     " kept no bytes (record with ExecuteOptions::record_all)");
    char idx[32];
    std::snprintf(idx, sizeof idx, "%05zu", k);
    json e = {{"site", m.site},
              {"kind", m.kind},
              {"stream", m.generator},
              {"step", m.step},
              {"micro_batch", m.micro_batch},
              {"draw", m.recompute ? "recompute" : "forward"},
              {"p", m.p},
              {"layout", mask_layout(m.kind)},
              {"mask", w.tensor(m.mask, "mask." + std::string(idx) + "." + m.site)}};
    if (r.seed_offset_rng) {
      e["seed"] = m.seed;
      e["offset"] = m.offset;
    }
    masks.push_back(std::move(e));
  }
  return masks;
}

// The fields a run may leave out: counts, side effects, memory figures, and rcts's own.
void optional_fields(const RunRecord& r, json& man) {
  if (r.seed_offset_rng) man["rng_initial"] = states_json(r.rng_initial);
  if (!r.not_recorded.count("counts")) {
    json counts = json::object();
    for (const auto& [path, c] : r.counts) counts[path] = {{"original", c.original}, {"recompute", c.recompute}};
    man["counts"] = counts;
  }
  if (!r.not_recorded.count("side_effects")) man["side_effects"] = r.side_effects;
  if (!r.not_recorded_why.empty()) man["not_recorded"] = r.not_recorded_why;
  json memory = json::object();
  if (!r.not_recorded.count("memory.saved_peak")) memory["saved_peak"] = r.saved_peak;
  if (!r.not_recorded.count("memory.device_peak")) memory["device_peak"] = r.device_peak;
  if (!r.not_recorded.count("memory.workspace_peak")) memory["workspace_peak"] = r.workspace_peak;
  man["memory"] = memory;
  if (r.implementation == "rcts") {
    json plan = json::array();
    for (const auto& s : r.plan) plan.push_back({s.begin, s.end, s.checkpointed});
    json rcts = {{"plan", plan}, {"workspace_heap_allocations", r.workspace_heap_allocations}};
    if (r.offload) rcts["offload_report"] = offload_json(*r.offload);
    man["rcts"] = rcts;
  }
}

}  // namespace

void write_dump(const fs::path& dir, const DumpMeta& meta, const RunRecord& r) {
  // Format 1 has a loss per micro-batch on every rank; a pipeline stage but the last has none.
  RCTS_CHECK(r.config.parallel.pipeline_model_parallel_size == 1,
             "dump " + dir.string() + ": dumps of pipeline-parallel runs (pipeline_model_parallel_size = " +
                 std::to_string(r.config.parallel.pipeline_model_parallel_size) + ") are not implemented yet");
  const int n = r.micro_batches_total();
  const int steps = r.config.run.steps;
  RCTS_CHECK(static_cast<int>(r.targets.size()) == n && static_cast<int>(r.params_before_step.size()) == steps &&
                 static_cast<int>(r.grads_of_step.size()) == steps,
             "dump " + dir.string() + ": the run was not recorded with ExecuteOptions::record_all");
  std::error_code ec;
  fs::create_directories(dir, ec);
  RCTS_CHECK(!ec && fs::is_directory(dir), "dump directory " + dir.string() + " cannot be created: " + ec.message());
  Writer w(dir);
  const json mbs = micro_batches_json(r, w);
  const json step_list = steps_json(r, w);
  const json masks = masks_json(r, w, dir);
  json man = {{"format", kFormat},
              {"version", kDumpVersion},
              {"case", {{"id", meta.case_id}, {"file", meta.case_file}}},
              {"run", {{"name", meta.run}, {"role", meta.role}}},
              {"implementation",
               {{"name", r.implementation},
                {"version", meta.version},
                {"backend", r.backend},
                {"arithmetic", r.rcts_arithmetic ? "rcts" : r.implementation},
                {"rng_states", r.seed_offset_rng ? kSeedOffset : kOpaque},
                {"mask_rule", r.rcts_mask_rule ? kRctsMaskRule : kNoMaskRule}}},
              {"rank",
               {{"world_rank", meta.world_rank},
                {"world_size", meta.world_size},
                {"tp", r.coords.tp},
                {"cp", r.coords.cp},
                {"dp", r.coords.dp},
                {"pp", r.coords.pp},
                {"etp", r.coords.etp},
                {"ep", r.coords.ep},
                {"edp", r.coords.edp}}},
              {"config", config_to_json(r.config)},
              {"layouts", layouts()},
              {"micro_batches", mbs},
              {"steps", step_list},
              {"parameters", w.named(r.params, "param.", true)},
              {"masks", masks}};
  if (!meta.of_variant.empty()) man["run"]["of_variant"] = meta.of_variant;
  optional_fields(r, man);
  write_file_atomic(dir / kDumpManifest, man.dump(1) + "\n", /*durable=*/false, /*sweep=*/false);
}

}  // namespace rcts::harness
