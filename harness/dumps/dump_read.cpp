// Dump format 1's strict reader: a dump directory back into a RunRecord
// (docs/dump-format.md). The identity, steps, masks and optional sections are read here,
// the micro-batches in dump_read_micro_batches.cpp, every tensor file by Reader
// (dump_reader.cpp). Every field dump_write.cpp writes is read back here.
#include "harness/dumps/dump_v1.hpp"

#include <nlohmann/json.hpp>

#include "harness/dumps/dump_format.hpp"
#include "harness/dumps/dump_reader.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/config/config_json.hpp"
#include "reference/memory_model/saved_profile.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace dump_detail;

namespace {

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

// The dims `cfg` fixes.
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
  const std::string want_layout = mask_layout(m.kind);
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
