// Dump format 1: the writer (RunRecord -> dump.json + .npy) and the strict reader
// (dump -> RunRecord). docs/dump-format.md is the specification; keep them in step.
// Over 400 lines on purpose: the writer and the reader of each field sit in one file
// so a field cannot change on one side only.
#include "harness/dumps/dump_v1.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/io/atomic_file.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/json_reader.hpp"
#include "harness/io/npy.hpp"
#include "harness/io/strict_json.hpp"
#include "harness/io/hex_bits.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/limits.hpp"
#include "reference/core/memory.hpp"
#include "reference/memory_model/saved_profile.hpp"
#include "reference/runtime/runtime.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "rcts-dump";
constexpr const char* kSeedOffset = "seed-offset";
constexpr const char* kOpaque = "opaque";
constexpr const char* kRctsMaskRule = "rcts-philox4x32-10";
constexpr const char* kNoMaskRule = "none";
// A tensor file is read and hashed in pieces of this size.
constexpr uint64_t kReadChunkBytes = uint64_t{1} << 20;

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

// ---- writing --------------------------------------------------------------------

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

std::string mb_stem(int step, int mb) { return "s" + std::to_string(step) + ".mb" + std::to_string(mb); }

// ---- reading --------------------------------------------------------------------

class Reader {
 public:
  Reader(fs::path dir, std::string manifest) : dir_(std::move(dir)), manifest_(std::move(manifest)) {}

  // A required member.
  JsonReader need(const JsonReader& r, const char* key) const {
    if (!r.json().is_object()) r.fail("expected an object");
    if (!r.has(key)) r.fail("missing field '" + std::string(key) + "'");
    return r.at(key);
  }
  uint64_t u64(const JsonReader& r) const {
    if (!r.json().is_number_unsigned() && !(r.json().is_number_integer() && r.json().get<int64_t>() >= 0))
      r.fail("expected a non-negative integer");
    return r.json().get<uint64_t>();
  }
  int64_t i64(const JsonReader& r, int64_t lo = 0) const {
    return r.integer(lo, std::numeric_limits<int64_t>::max());
  }

  Tensor tensor(const JsonReader& r, const std::string& name) const {
    r.expect_object({"file", "dtype", "shape", "sha256", "name", "megatron_name"});
    const std::string file = need(r, "file").str();
    if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file[0] == '.')
      r.at("file").fail("a tensor file is a plain file name inside the dump directory");
    DType dtype;
    try {
      dtype = parse_dtype(need(r, "dtype").str());
    } catch (const Error& e) {
      r.at("dtype").fail(e.message());
    }
    const JsonReader sr = need(r, "shape");
    if (sr.array_size() > static_cast<size_t>(limits::kMaxTensorDims))
      sr.fail(std::to_string(sr.array_size()) + " dimensions, more than the " +
              std::to_string(limits::kMaxTensorDims) + " a tensor may have");
    Shape shape;
    for (size_t i = 0; i < sr.array_size(); ++i) shape.push_back(i64(sr.at(i)));
    const auto want = shape_bytes(shape, dtype_size(dtype), static_cast<uint64_t>(limits::kMaxDumpTensorBytes));
    if (!want)
      sr.fail("a " + std::string(dtype_name(dtype)) + " tensor of this shape needs more than the " +
              std::to_string(limits::kMaxDumpTensorBytes) + " bytes a dumped tensor may have");
    const std::string sha = need(r, "sha256").str();
    const fs::path path = dir_ / file;
    const std::string where = "tensor file " + path.string() + " ";
    if (const auto out = outside_the_dump(path)) r.at("file").fail(where + *out);
    if (std::error_code ec; !fs::is_regular_file(path, ec))
      r.at("file").fail(where + (fs::exists(fs::symlink_status(path, ec)) ? "is not a regular file (a FIFO, socket, device or directory)"
                                                                         : "does not exist"));
    NpyHeader h;
    try {
      h = read_npy_header(path);
    } catch (const Error& e) {
      r.at("file").fail(e.message());
    }
    if (h.descr != dtype_numpy(dtype))
      r.at("dtype").fail(where + "holds '" + h.descr + "', dtype " + std::string(dtype_name(dtype)) + " is stored as '" +
                         std::string(dtype_numpy(dtype)) + "'");
    if (h.fortran_order) r.at("file").fail(where + "is in Fortran order; dumps are C order");
    if (h.shape != shape) r.at("shape").fail(where + "has shape " + shape_str(h.shape));
    if (h.data_bytes != *want)  // from the file's size, before a byte of it is read
      r.at("file").fail(where + "holds " + std::to_string(h.data_bytes) + " data bytes, shape " + shape_str(shape) +
                        " of " + std::string(dtype_name(dtype)) + " needs " + std::to_string(*want) +
                        (h.data_bytes < *want ? " (truncated)" : ""));
    // Straight into the tensor, hashed chunk by chunk: the file is held once, not twice.
    Tensor t = Tensor::empty(shape, dtype, host_placement(), name);
    std::ifstream in(path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(h.data_offset));
    if (!in) r.at("file").fail(where + "cannot be read");
    Sha256 hash;
    std::byte* into = t.numel() ? t.bytes() : nullptr;
    for (uint64_t at = 0; at < *want;) {
      const uint64_t n = std::min<uint64_t>(kReadChunkBytes, *want - at);
      in.read(reinterpret_cast<char*>(into + at), static_cast<std::streamsize>(n));
      if (static_cast<uint64_t>(in.gcount()) != n) r.at("file").fail(where + "changed size while being read");
      hash.update(into + at, static_cast<size_t>(n));
      at += n;
    }
    const std::string got = hash.hex();
    if (got != sha) r.at("sha256").fail(where + "has sha256 " + got + " (changed after the manifest was written)");
    return t;
  }

  // Why `path` (a file of the dump, maybe a symlink) resolves outside the dump
  // directory; nullopt when it stays inside.
  std::optional<std::string> outside_the_dump(const fs::path& path) const {
    std::error_code ec;
    if (!fs::is_symlink(path, ec)) return std::nullopt;
    const fs::path real = fs::weakly_canonical(path, ec);
    if (ec) {  // a loop of links, or one too long to follow: name where it points
      std::error_code e2;
      return "is a symbolic link to '" + fs::read_symlink(path, e2).string() + "' that cannot be resolved (" +
             ec.message() + ")";
    }
    const fs::path root = fs::weakly_canonical(dir_, ec);
    const auto [r, p] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
    if (!ec && r == root.end() && p != real.end()) return std::nullopt;
    return "is a symbolic link to " + real.string() + ", outside the dump directory " + root.string();
  }

  // A tensor, or an undefined one for JSON null.
  Tensor optional_tensor(const JsonReader& r, const std::string& name) const {
    return r.json().is_null() ? Tensor{} : tensor(r, name);
  }

  std::vector<NamedTensor> named(const JsonReader& r) const {
    std::vector<NamedTensor> out;
    for (size_t i = 0; i < r.array_size(); ++i) {
      const JsonReader e = r.at(i);
      const std::string name = need(e, "name").str();
      out.push_back({name, tensor(e, name)});
    }
    return out;
  }

  GeneratorState state(const JsonReader& r) const {
    r.expect_object({"seed", "offset"});
    return {u64(need(r, "seed")), u64(need(r, "offset"))};
  }

  RngStates states(const JsonReader& r) const {
    r.expect_object({"host", "device", "tracker", "active_forks"});
    RngStates s;
    s.host = state(need(r, "host"));
    s.device = state(need(r, "device"));
    const JsonReader t = need(r, "tracker");
    if (!t.json().is_object()) t.fail("expected an object mapping stream names to {seed, offset}");
    for (const auto& [name, v] : t.json().items()) s.tracker[name] = state(JsonReader(t.file(), v, t.path() + "/" + name));
    if (r.has("active_forks")) {
      const JsonReader a = r.at("active_forks");
      for (size_t i = 0; i < a.array_size(); ++i) s.active_forks.push_back(a.at(i).str());
    }
    return s;
  }

  std::map<std::string, std::string> opaque_states(const JsonReader& r) const {
    r.expect_object({"opaque"});
    const JsonReader o = need(r, "opaque");
    if (!o.json().is_object() || o.json().empty()) o.fail("expected an object mapping generator names to sha256 hex");
    std::map<std::string, std::string> out;
    for (const auto& [name, v] : o.json().items()) out[name] = JsonReader(o.file(), v, o.path() + "/" + name).str();
    return out;
  }

  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::string manifest_;
};

Category parse_category(const JsonReader& r) {
  const std::string s = r.str();
  for (int i = 0; i < kNumCategories; ++i)
    if (category_name(static_cast<Category>(i)) == s) return static_cast<Category>(i);
  r.fail("unknown memory category");
}

OffloadReport parse_offload(const Reader& rd, const JsonReader& r) {
  r.expect_object({"by_name", "by_group", "tensors", "margin_groups", "host_pool_allocations", "exposed_wait_s",
                   "iterations"});
  OffloadReport o;
  auto stats = [&](const JsonReader& m, std::map<std::string, OffloadGroupStats>& into) {
    if (!m.json().is_object()) m.fail("expected an object");
    for (const auto& [k, v] : m.json().items()) {
      const JsonReader e(m.file(), v, m.path() + "/" + k);
      e.expect_object({"offloaded_bytes", "reloaded_bytes", "kept_bytes", "groups", "margin_groups"});
      into[k] = {rd.i64(rd.need(e, "offloaded_bytes")), rd.i64(rd.need(e, "reloaded_bytes")),
                 rd.i64(rd.need(e, "kept_bytes")), static_cast<int>(rd.need(e, "groups").integer(0, 1 << 30)),
                 static_cast<int>(rd.need(e, "margin_groups").integer(0, 1 << 30))};
    }
  };
  stats(rd.need(r, "by_name"), o.by_name);
  stats(rd.need(r, "by_group"), o.by_group);
  const JsonReader ts = rd.need(r, "tensors");
  for (size_t i = 0; i < ts.array_size(); ++i) {
    const JsonReader t = ts.at(i);
    t.expect_object({"group", "tensor", "numel", "offloaded", "kept_because", "storage", "storage_bytes", "storage_name"});
    o.tensors.push_back({rd.need(t, "group").str(), rd.need(t, "tensor").str(), rd.i64(rd.need(t, "numel")),
                         rd.need(t, "offloaded").boolean(), rd.need(t, "kept_because").str(),
                         rd.u64(rd.need(t, "storage")), rd.i64(rd.need(t, "storage_bytes")),
                         rd.need(t, "storage_name").str()});
  }
  const JsonReader mg = rd.need(r, "margin_groups");
  for (size_t i = 0; i < mg.array_size(); ++i) o.margin_groups.push_back(mg.at(i).str());
  const JsonReader hp = rd.need(r, "host_pool_allocations");
  for (size_t i = 0; i < hp.array_size(); ++i) o.host_pool_allocations.push_back(rd.i64(hp.at(i)));
  o.exposed_wait_s = rd.need(r, "exposed_wait_s").number(0, 1e9);
  o.iterations = static_cast<int>(rd.need(r, "iterations").integer(0, 1 << 30));
  return o;
}

void check_names_match(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want,
                       const JsonReader& where, const std::string& against) {
  if (got.size() != want.size())
    where.fail(std::to_string(got.size()) + " tensors, " + against + " has " + std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].name != want[i].name)
      where.at(i).fail("named '" + got[i].name + "', " + against + " has '" + want[i].name + "' at this position");
}

}  // namespace

std::string megatron_name(const std::string& name) {
  // layers.<i>.<rest>
  if (name.rfind("layers.", 0) != 0) return {};
  const auto dot = name.find('.', 7);
  if (dot == std::string::npos) return {};
  const std::string layer = name.substr(0, dot), rest = name.substr(dot + 1);
  static const std::vector<std::pair<std::string, std::string>> map = {
      {"input_layernorm.", "input_layernorm."},
      {"attention.qkv.", "self_attention.linear_qkv."},
      {"attention.proj.", "self_attention.linear_proj."},
      {"pre_mlp_layernorm.", "pre_mlp_layernorm."},
      {"mlp.fc1.", "mlp.linear_fc1."},
      {"mlp.fc2.", "mlp.linear_fc2."},
      {"moe.router.", "mlp.router."},
      {"moe.shared_experts.fc1.", "mlp.shared_experts.linear_fc1."},
      {"moe.shared_experts.fc2.", "mlp.shared_experts.linear_fc2."},
  };
  for (const auto& [from, to] : map)
    if (rest.rfind(from, 0) == 0) return "decoder." + layer + "." + to + rest.substr(from.size());
  // moe.experts.<e>.fc1.weight -> mlp.experts.local_experts.<e>.linear_fc1.weight (SequentialMLP)
  if (rest.rfind("moe.experts.", 0) == 0) {
    const auto e_end = rest.find('.', 12);
    if (e_end == std::string::npos) return {};
    const std::string tail = rest.substr(e_end + 1);
    const std::string fc = tail.rfind("fc1.", 0) == 0 ? "linear_fc1." : tail.rfind("fc2.", 0) == 0 ? "linear_fc2." : "";
    if (fc.empty()) return {};
    return "decoder." + layer + ".mlp.experts.local_experts." + rest.substr(12, e_end - 12) + "." + fc + tail.substr(4);
  }
  return {};
}

fs::path dump_dir_of(const fs::path& root, const std::string& case_id, const std::string& backend,
                     const std::string& run, int world_rank) {
  return root / safe_file_stem(case_id) / safe_file_stem(backend) / ("rank" + std::to_string(world_rank)) /
         safe_file_stem(run);
}

namespace {

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
              {"layout", m.kind == "attention" ? "attention_mask" : m.kind == "hidden" ? "hidden_mask" : "rows"},
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

namespace {

// /case, /run, /implementation, /rank and /config.
void read_identity(const Reader& rd, const JsonReader& root, const std::string& file, DumpMeta& meta, RunRecord& r) {
  const JsonReader cs = rd.need(root, "case");
  cs.expect_object({"id", "file"});
  meta.case_id = rd.need(cs, "id").str();
  if (cs.has("file")) meta.case_file = cs.at("file").str();
  const JsonReader run = rd.need(root, "run");
  run.expect_object({"name", "role", "of_variant"});
  meta.run = rd.need(run, "name").str();
  meta.role = rd.need(run, "role").str();
  if (meta.role != "baseline" && meta.role != "variant" && meta.role != "rerun")
    run.at("role").fail("expected \"baseline\", \"variant\" or \"rerun\"");
  if (meta.role == "baseline" && meta.run != "baseline") run.at("name").fail("the baseline's run is named \"baseline\"");
  if (meta.role == "rerun") meta.of_variant = rd.need(run, "of_variant").str();

  const JsonReader impl = rd.need(root, "implementation");
  impl.expect_object({"name", "version", "backend", "arithmetic", "rng_states", "mask_rule"});
  r.implementation = rd.need(impl, "name").str();
  if (impl.has("version")) meta.version = impl.at("version").str();
  r.backend = rd.need(impl, "backend").str();
  r.rcts_arithmetic = rd.need(impl, "arithmetic").str() == "rcts";
  const std::string states = rd.need(impl, "rng_states").str();
  if (states != kSeedOffset && states != kOpaque) impl.at("rng_states").fail("expected \"seed-offset\" or \"opaque\"");
  r.seed_offset_rng = states == kSeedOffset;
  const std::string rule = rd.need(impl, "mask_rule").str();
  if (rule != kRctsMaskRule && rule != kNoMaskRule) impl.at("mask_rule").fail("expected \"rcts-philox4x32-10\" or \"none\"");
  r.rcts_mask_rule = rule == kRctsMaskRule;
  if (r.rcts_mask_rule && !r.seed_offset_rng)
    impl.at("mask_rule").fail("the rcts mask rule draws from (seed, offset) states: rng_states must be \"seed-offset\"");

  const JsonReader rank = rd.need(root, "rank");
  rank.expect_object({"world_rank", "world_size", "tp", "cp", "dp", "pp", "etp", "ep", "edp"});
  meta.world_size = static_cast<int>(rd.need(rank, "world_size").integer(1, 1 << 16));
  meta.world_rank = static_cast<int>(rd.need(rank, "world_rank").integer(0, meta.world_size - 1));
  auto coord = [&](const char* k) { return static_cast<int>(rd.need(rank, k).integer(0, 1 << 16)); };
  r.coords = {coord("tp"), coord("cp"), coord("dp"), coord("pp"), coord("etp"), coord("ep"), coord("edp")};

  try {
    r.config = config_from_json(rd.need(root, "config").json(), file, "/config");
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
}

// What the config fixes of every tensor of the dump on this rank.
struct DumpDims {
  int per = 1, steps = 1;  // micro-batches per step, steps
  bool training = true;
  Shape act_shape;   // (s*b, h)
  bool sp = false;   // under sequence parallelism the block's input gradient is this rank's shard
  int64_t tp = 1;
  Shape grad_shape;  // (s/tp*b, h) under SP, else (s*b, h)
  DType act = DType::bf16;
};

DumpDims dims_of(const Config& cfg) {
  DumpDims d;
  d.per = cfg.run.micro_batches;
  d.steps = cfg.run.steps;
  d.training = cfg.run.training;
  const int64_t tokens = int64_t{cfg.model.seq_length} * cfg.model.micro_batch_size;
  d.act_shape = {tokens, cfg.model.hidden_size};
  d.sp = cfg.parallel.sequence_parallel;
  d.tp = std::max(1, cfg.parallel.tensor_model_parallel_size);
  d.grad_shape = {d.sp ? tokens / d.tp : tokens, cfg.model.hidden_size};
  d.act = cfg.model.activation_dtype;
  return d;
}

// /steps and /parameters: each step's parameters and gradients, named as the parameters.
void read_steps(const Reader& rd, const JsonReader& root, const DumpDims& dims, RunRecord& r) {
  const int steps = dims.steps;
  const JsonReader sl = rd.need(root, "steps");
  if (sl.array_size() != static_cast<size_t>(steps))
    sl.fail(std::to_string(sl.array_size()) + " steps, the config has run.steps = " + std::to_string(steps));
  for (int s = 0; s < steps; ++s) {
    const JsonReader e = sl.at(static_cast<size_t>(s));
    e.expect_object({"step", "params_before", "grads"});
    if (rd.need(e, "step").integer(0, 1 << 30) != s) e.at("step").fail("expected step " + std::to_string(s));
    r.params_before_step.push_back(rd.named(rd.need(e, "params_before")));
    r.grads_of_step.push_back(rd.named(rd.need(e, "grads")));
  }
  r.params = rd.named(rd.need(root, "parameters"));
  if (r.params.empty()) root.at("parameters").fail("no parameters");
  for (int s = 0; s < steps; ++s) {
    const JsonReader e = sl.at(static_cast<size_t>(s));
    check_names_match(r.params_before_step[s], r.params, e.at("params_before"), "/parameters");
    std::vector<NamedTensor> want;
    for (const auto& p : r.params) want.push_back({p.name + ".grad", {}});
    check_names_match(r.grads_of_step[s], want, e.at("grads"), "/parameters (with \".grad\")");
    for (size_t i = 0; i < r.params.size(); ++i)
      if (r.grads_of_step[s][i].tensor.shape() != r.params[i].tensor.shape())
        e.at("grads").at(i).fail("shape " + shape_str(r.grads_of_step[s][i].tensor.shape()) + ", the parameter has " +
                                 shape_str(r.params[i].tensor.shape()));
  }
  r.grads = r.grads_of_step.back();
}

// A micro-batch's loss: its bits are the value; "value" (null for NaN) must agree.
double read_loss(const Reader& rd, const JsonReader& e) {
  const JsonReader loss = rd.need(e, "loss");
  loss.expect_object({"value", "bits"});
  const std::string bits = rd.need(loss, "bits").str();
  uint64_t u = 0;
  if (bits.size() != 18 || bits.compare(0, 2, "0x") != 0 ||
      bits.find_first_not_of("0123456789abcdefABCDEF", 2) != std::string::npos)
    loss.at("bits").fail("expected the double's 64 bits as \"0x\" and 16 hex digits");
  u = std::stoull(bits.substr(2), nullptr, 16);
  double v;
  std::memcpy(&v, &u, sizeof v);
  if (loss.has("value") && !loss.at("value").json().is_null()) {  // NaN is written as null
    const double shown = loss.at("value").number(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    if (std::memcmp(&shown, &v, sizeof v) != 0 && !(shown == v))
      loss.at("value").fail("disagrees with its bits " + bits);
  }
  return v;
}

// A save's optional op, dtype and shape; the bytes must be the shape's.
RunRecord::SaveShape read_save_shape(const Reader& rd, const JsonReader& s, int64_t bytes) {
  RunRecord::SaveShape sh;
  if (s.has("op")) sh.op = s.at("op").str();
  if (s.has("dtype") != s.has("shape")) s.fail("give both dtype and shape, or neither");
  if (!s.has("dtype")) return sh;
  sh.dtype = s.at("dtype").str();
  const int64_t each = dtype_name_bytes(sh.dtype);
  if (each == 0) s.at("dtype").fail("not a dtype (f64, f32, bf16, f16, i64, i32, u8, bool)");
  const JsonReader sr = s.at("shape");
  if (sr.array_size() > 32) sr.fail("more than 32 dimensions");
  int64_t n = each;
  for (size_t i = 0; i < sr.array_size(); ++i) {
    sh.shape.push_back(rd.i64(sr.at(i)));
    if (sh.shape.back() > 0 && n > (int64_t{1} << 40) / sh.shape.back()) sr.fail("more than 2^40 bytes");
    n *= sh.shape.back();
  }
  if (n != bytes)
    s.at("bytes").fail("a " + sh.dtype + " " + shape_text(sh.shape) + " tensor holds " + std::to_string(n) + " bytes");
  return sh;
}

// A micro-batch's saved_tensors (or held_after_backward), with each save's shape.
std::vector<SaveRecord> read_saves(const Reader& rd, const JsonReader& st,
                                   std::vector<RunRecord::SaveShape>* shapes = nullptr) {
  std::vector<SaveRecord> saves;
  for (size_t k = 0; k < st.array_size(); ++k) {
    const JsonReader s = st.at(k);
    s.expect_object({"module", "tensor", "bytes", "category", "storage", "offset", "recompute", "op", "dtype", "shape"});
    SaveRecord rec;
    rec.module_path = rd.need(s, "module").str();
    rec.tensor = rd.need(s, "tensor").str();
    rec.bytes = rd.i64(rd.need(s, "bytes"));
    rec.category = s.has("category") ? parse_category(s.at("category")) : Category::saved_activation;
    rec.storage_id = s.has("storage") ? rd.u64(s.at("storage")) : 0;
    rec.offset = s.has("offset") ? rd.i64(s.at("offset")) : 0;
    rec.recompute = s.has("recompute") && s.at("recompute").boolean();
    if (shapes) shapes->push_back(read_save_shape(rd, s, rec.bytes));
    saves.push_back(std::move(rec));
  }
  return saves;
}

// /micro_batches/i.
void read_micro_batch(const Reader& rd, const JsonReader& e, int i, const DumpDims& dims, RunRecord& r) {
  const auto& cfg = r.config;
  const auto& [per, steps, training, act_shape, sp, tp, grad_shape, act] = dims;
  e.expect_object({"step", "micro_batch", "loss", "input", "target", "output", "input_grad", "param_grads",
                   "rng_after", "saved_bytes_per_layer", "saved_tensors", "held_after_backward", "saved_peak", "saved_after_forward",
                   "host_resident_after_forward", "offloaded_bytes", "reloaded_bytes"});
  if (rd.need(e, "step").integer(0, 1 << 30) != i / per) e.at("step").fail("expected step " + std::to_string(i / per));
  if (rd.need(e, "micro_batch").integer(0, 1 << 30) != i % per)
    e.at("micro_batch").fail("expected micro-batch " + std::to_string(i % per));
  r.losses.push_back(read_loss(rd, e));
  const std::string stem = mb_stem(i / per, i % per);
  // `act` by an init-capture: clang 14 cannot capture a structured binding.
  auto activation = [&, act = act](const char* key, const Shape& want, const char* what) {
    Tensor t = rd.tensor(rd.need(e, key), stem + "." + key);
    if (t.shape() != want || t.dtype() != act)
      e.at(key).fail("a " + std::string(dtype_name(t.dtype())) + " " + shape_str(t.shape()) +
                     " tensor; the config's activations are " + std::string(dtype_name(act)) + " " +
                     shape_str(want) + " " + what);
    return t;
  };
  r.inputs.push_back(activation("input", act_shape, "(s*b, h)"));
  r.targets.push_back(activation("target", act_shape, "(s*b, h)"));
  r.outputs.push_back(activation("output", act_shape, "(s*b, h)"));
  if (training) {
    if (rd.need(e, "input_grad").json().is_null()) e.at("input_grad").fail("a training run has an input gradient");
    r.input_grads.push_back(activation("input_grad", grad_shape, sp ? "(s/tp*b, h): this rank's sequence shard" : "(s*b, h)"));
  } else {
    if (e.has("input_grad") && !e.at("input_grad").json().is_null())
      e.at("input_grad").fail("an eval run (run.training = false) has no input gradient: write null");
    r.input_grads.emplace_back();
  }
  r.grads_after_micro_batch.push_back(rd.named(rd.need(e, "param_grads")));
  check_names_match(r.grads_after_micro_batch.back(), r.grads, e.at("param_grads"), "/steps/*/grads");
  if (r.seed_offset_rng) r.rng_after.push_back(rd.states(rd.need(e, "rng_after")));
  else r.rng_after_opaque.push_back(rd.opaque_states(rd.need(e, "rng_after")));
  const JsonReader sb = rd.need(e, "saved_bytes_per_layer");
  if (sb.array_size() != static_cast<size_t>(cfg.model.num_layers))
    sb.fail(std::to_string(sb.array_size()) + " layers, the config has model.num_layers = " +
            std::to_string(cfg.model.num_layers));
  std::vector<int64_t> per_layer;
  for (size_t l = 0; l < sb.array_size(); ++l) per_layer.push_back(rd.i64(sb.at(l)));
  r.saved_bytes_per_layer.push_back(std::move(per_layer));
  if (e.has("saved_tensors")) {
    r.save_shapes_per_micro_batch.emplace_back();
    r.saves_per_micro_batch.push_back(read_saves(rd, e.at("saved_tensors"), &r.save_shapes_per_micro_batch.back()));
  } else {
    r.not_recorded.insert("saved_tensors");
  }
  if (e.has("held_after_backward")) {
    r.held_after_backward_shapes.emplace_back();
    r.held_after_backward.push_back(read_saves(rd, e.at("held_after_backward"), &r.held_after_backward_shapes.back()));
  }
  if (e.has("saved_peak")) r.saved_peaks.push_back(rd.i64(e.at("saved_peak")));
  else r.not_recorded.insert("saved_peak");
  if (e.has("saved_after_forward")) {
    r.saved_after_forward.push_back(rd.i64(e.at("saved_after_forward")));
    r.host_resident_after_forward.push_back(rd.i64(rd.need(e, "host_resident_after_forward")));
  } else {
    r.not_recorded.insert("saved_after_forward");
  }
  if (e.has("offloaded_bytes")) {
    r.offloaded_bytes.push_back(rd.i64(e.at("offloaded_bytes")));
    r.reloaded_bytes.push_back(rd.i64(rd.need(e, "reloaded_bytes")));
  }
}

// /micro_batches: every micro-batch, and the optional fields given for all or none.
void read_micro_batches(const Reader& rd, const JsonReader& root, const DumpDims& dims, RunRecord& r) {
  const int per = dims.per, steps = dims.steps;
  const JsonReader ml = rd.need(root, "micro_batches");
  if (ml.array_size() != static_cast<size_t>(steps * per))
    ml.fail(std::to_string(ml.array_size()) + " micro-batches, the config has run.steps x run.micro_batches = " +
            std::to_string(steps * per));
  for (int i = 0; i < steps * per; ++i) read_micro_batch(rd, ml.at(static_cast<size_t>(i)), i, dims, r);
  if (!r.saves_per_micro_batch.empty()) {
    if (r.saves_per_micro_batch.size() != r.losses.size())
      ml.fail("saved_tensors is given for some micro-batches only");
    r.saves = r.saves_per_micro_batch.front();
  }
  if (r.saved_peaks.size() != r.losses.size() && !r.saved_peaks.empty())
    ml.fail("saved_peak is given for some micro-batches only");
  if (r.held_after_backward.size() != r.losses.size() && !r.held_after_backward.empty())
    ml.fail("held_after_backward is given for some micro-batches only");
  if (r.saved_after_forward.size() != r.losses.size() && !r.saved_after_forward.empty())
    ml.fail("saved_after_forward is given for some micro-batches only");
  if (r.offloaded_bytes.size() != r.losses.size() && !r.offloaded_bytes.empty())
    ml.fail("offloaded_bytes is given for some micro-batches only");
}

// /masks/k: a dropout draw, its bytes 0 or 1 in the shape the layouts fix.
MaskRecord read_mask(const Reader& rd, const JsonReader& e, const DumpDims& dims, const RunRecord& r) {
  const auto& cfg = r.config;
  const auto& [per, steps, training, act_shape, sp, tp, grad_shape, act] = dims;
  e.expect_object({"site", "kind", "stream", "seed", "offset", "step", "micro_batch", "draw", "p", "layout", "mask"});
  MaskRecord m;
  m.site = rd.need(e, "site").str();
  m.kind = rd.need(e, "kind").str();
  if (m.kind != "attention" && m.kind != "hidden" && m.kind != "expert")
    e.at("kind").fail("expected \"attention\", \"hidden\" or \"expert\"");
  m.generator = rd.need(e, "stream").str();
  if (r.seed_offset_rng) {
    m.seed = rd.u64(rd.need(e, "seed"));
    m.offset = rd.u64(rd.need(e, "offset"));
  }
  m.step = static_cast<int>(rd.need(e, "step").integer(0, steps - 1));
  m.micro_batch = static_cast<int>(rd.need(e, "micro_batch").integer(0, per - 1));
  const std::string draw = rd.need(e, "draw").str();
  if (draw != "forward" && draw != "recompute") e.at("draw").fail("expected \"forward\" or \"recompute\"");
  m.recompute = draw == "recompute";
  m.p = rd.need(e, "p").number(0.0, 1.0);
  const std::string layout = rd.need(e, "layout").str();
  const std::string want_layout = m.kind == "attention" ? "attention_mask" : m.kind == "hidden" ? "hidden_mask" : "rows";
  if (layout != want_layout) e.at("layout").fail("a " + m.kind + " mask has layout \"" + want_layout + "\"");
  m.mask = rd.tensor(rd.need(e, "mask"), m.site + ".mask");
  if (m.mask.dtype() != DType::u8) e.at("mask").fail("masks are u8 (1 keep, 0 drop)");
  // The layouts (/layouts) fix the shapes of attention and hidden masks on this rank.
  Shape want_shape;
  if (m.kind == "attention")
    want_shape = {cfg.model.micro_batch_size, cfg.model.num_attention_heads / tp, cfg.model.seq_length,
                  cfg.model.seq_length};
  else if (m.kind == "hidden")
    want_shape = grad_shape;
  if (!want_shape.empty() && m.mask.shape() != want_shape)
    e.at("mask").at("shape").fail("a " + m.kind + " mask of this config on this rank is " + shape_str(want_shape) +
                                  (m.kind == "attention" ? " (b, heads / tp, s, s)" : sp ? " (s/tp*b, h)" : " (s*b, h)"));
  m.shape = m.mask.shape();
  m.numel = m.mask.numel();
  const auto* bytes = reinterpret_cast<const uint8_t*>(m.mask.numel() ? m.mask.bytes() : nullptr);
  for (int64_t x = 0; x < m.numel; ++x)
    if (bytes[x] > 1) e.at("mask").fail("element " + std::to_string(x) + " is " + std::to_string(bytes[x]) + ", not 0 or 1");
  m.digest = fnv1a64(bytes, static_cast<size_t>(m.numel));
  return m;
}

// /counts, /side_effects and /memory; what is absent is noted as not recorded.
void read_optional(const Reader& rd, const JsonReader& root, RunRecord& r) {
  if (root.has("counts")) {
    const JsonReader c = root.at("counts");
    if (!c.json().is_object()) c.fail("expected an object mapping module paths to {original, recompute}");
    for (const auto& [k, v] : c.json().items()) {
      const JsonReader e(c.file(), v, c.path() + "/" + k);
      e.expect_object({"original", "recompute"});
      r.counts[k] = {rd.i64(rd.need(e, "original")), rd.i64(rd.need(e, "recompute"))};
    }
  } else {
    r.not_recorded.insert("counts");
  }
  if (root.has("side_effects")) {
    const JsonReader s = root.at("side_effects");
    if (!s.json().is_object()) s.fail("expected an object mapping names to numbers");
    for (const auto& [k, v] : s.json().items())
      r.side_effects[k] = JsonReader(s.file(), v, s.path() + "/" + k).number(-1e300, 1e300);
  } else {
    r.not_recorded.insert("side_effects");
  }
  const bool has_memory = root.has("memory");
  if (has_memory) root.at("memory").expect_object({"saved_peak", "device_peak", "workspace_peak"});
  auto memory = [&](const char* key, int64_t& into) {
    if (has_memory && root.at("memory").has(key)) into = rd.i64(root.at("memory").at(key));
    else r.not_recorded.insert(std::string("memory.") + key);
  };
  memory("saved_peak", r.saved_peak);
  memory("device_peak", r.device_peak);
  memory("workspace_peak", r.workspace_peak);
}

// /rcts: rcts's own plan, workspace allocations and offload report.
void read_rcts_fields(const Reader& rd, const JsonReader& root, RunRecord& r) {
  if (root.has("rcts")) {
    const JsonReader x = root.at("rcts");
    x.expect_object({"plan", "workspace_heap_allocations", "offload_report"});
    if (x.has("plan")) {
      const JsonReader p = x.at("plan");
      for (size_t k = 0; k < p.array_size(); ++k) {
        const JsonReader s = p.at(k);
        if (s.array_size() != 3) s.fail("a segment is [begin, end, checkpointed]");
        Segment seg;
        seg.begin = static_cast<int>(s.at(size_t{0}).integer(0, 1 << 20));
        seg.end = static_cast<int>(s.at(size_t{1}).integer(0, 1 << 20));
        seg.checkpointed = s.at(size_t{2}).boolean();
        r.plan.push_back(seg);
      }
    }
    if (x.has("workspace_heap_allocations")) {
      const JsonReader a = x.at("workspace_heap_allocations");
      for (size_t k = 0; k < a.array_size(); ++k) r.workspace_heap_allocations.push_back(rd.i64(a.at(k)));
    }
    if (x.has("offload_report")) r.offload = parse_offload(rd, x.at("offload_report"));
  }
}

// /not_recorded.
void read_not_recorded(const JsonReader& root, RunRecord& r) {
  if (root.has("not_recorded")) {
    // What the writer declares it could not observe, with why; the field itself must be
    // absent, so no check reads a value the writer says is not evidence.
    const JsonReader nr = root.at("not_recorded");
    nr.expect_object({"side_effects", "counts"});
    for (const auto& [field, why] : nr.json().items()) {
      const JsonReader w(nr.file(), why, nr.path() + "/" + field);
      if (root.has(field.c_str())) w.fail("declared not recorded, but the dump has " + field);
      const std::string reason = w.str();
      if (reason.empty()) w.fail("give the reason it is not recorded");
      r.not_recorded_why[field] = reason;
    }
  }
}

}  // namespace

DumpedRun read_dump(const fs::path& dir) {
  const fs::path path = dir / kDumpManifest;
  if (!fs::is_regular_file(path)) throw Error(path.string() + ": no dump manifest (a dump directory holds dump.json)");
  const Reader rd(dir, path.string());
  if (const auto out = rd.outside_the_dump(path)) throw Error(path.string() + ": the dump manifest " + *out);
  const json j = read_json_file(path, "dump manifest");
  const std::string file = path.string();
  const JsonReader root(file, j);
  root.expect_object({"format", "version", "case", "run", "implementation", "rank", "config", "layouts", "rng_initial",
                      "micro_batches", "steps", "parameters", "masks", "counts", "side_effects", "memory", "rcts",
                      "not_recorded", "memory_profile"});
  if (rd.need(root, "format").str() != kFormat) root.at("format").fail("not an rcts dump (expected \"rcts-dump\")");
  if (const int64_t v = rd.need(root, "version").integer(0, 1 << 20); v != kDumpVersion)
    root.at("version").fail("this rcts reads dump format version " + std::to_string(kDumpVersion));

  DumpedRun d;
  d.dir = dir;
  DumpMeta& meta = d.meta;
  RunRecord& r = d.record;
  r.not_recorded.clear();

  read_identity(rd, root, file, meta, r);
  const DumpDims dims = dims_of(r.config);
  if (r.seed_offset_rng) r.rng_initial = rd.states(rd.need(root, "rng_initial"));
  read_steps(rd, root, dims, r);
  read_micro_batches(rd, root, dims, r);
  const JsonReader mk = rd.need(root, "masks");
  for (size_t k = 0; k < mk.array_size(); ++k) r.masks.push_back(read_mask(rd, mk.at(k), dims, r));
  read_optional(rd, root, r);
  read_rcts_fields(rd, root, r);
  read_not_recorded(root, r);
  if (root.has("memory_profile")) {
    const JsonReader mp = root.at("memory_profile");
    r.memory_profile = mp.str();
    if (!find_profile(r.memory_profile)) {
      std::string known;
      for (const auto& n : profile_names()) known += (known.empty() ? "" : ", ") + n;
      mp.fail("not a saved-tensor profile (" + known + ")");
    }
  }
  return d;
}
}  // namespace rcts::harness
