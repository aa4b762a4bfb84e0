// Builds the memory report once as JSON; the text form renders that JSON, so the
// two cannot disagree.
#include "reference/memory_model/report.hpp"

#include <cstdarg>
#include <cstdio>

#include "reference/config/pipeline_stage.hpp"
#include "reference/config/validate.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/memory_model/checkpoint_math.hpp"
#include "reference/memory_model/checked_math.hpp"

namespace rcts {
namespace {

using nlohmann::json;

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}
double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
long long ll(int64_t v) { return static_cast<long long>(v); }

json tensors_json(const LayerMemory& l) {
  json a = json::array();
  for (const auto& t : l.tensors)
    a.push_back({{"name", t.name}, {"bytes", t.bytes}, {"formula", t.formula}, {"kind", save_kind_name(t.kind)}});
  return a;
}

json overhead_json(const RecomputeOverhead& o) {
  return {{"forward_flops", o.forward_flops}, {"recompute_flops", o.recompute_flops},
          {"recompute_ratio", o.recompute_ratio}, {"step_ratio", o.step_ratio}};
}

std::string recompute_description(const Config& c) {
  const RecomputeConfig r = effective_recompute(c.recompute);
  if (r.recompute_granularity == "full")
    return "full " + *r.recompute_method + " recompute_num_layers=" + std::to_string(*r.recompute_num_layers) +
           (r.distribute_saved_activations ? " distribute_saved_activations" : "");
  if (r.recompute_granularity == "selective") {
    std::string s = "selective [";
    for (size_t i = 0; i < r.recompute_modules.size(); ++i) s += (i ? "," : "") + r.recompute_modules[i];
    return s + "]";
  }
  return "none";
}

}  // namespace

json memory_report_json(const Config& c) {
  const StageMemory st = stage_memory(c);  // validates
  const MemoryDims m = MemoryDims::from(c);
  const RecomputeConfig r = effective_recompute(c.recompute);
  const int L = layers_per_stage(c);  // design §16: the layers of one pipeline stage
  const double sbh = static_cast<double>(m.sbh());

  json j;
  j["dims"] = {{"s", m.s}, {"b", m.b}, {"h", m.h}, {"a", m.a}, {"ffn", m.ffn}, {"d", m.d}, {"L", L},
               {"activation", c.model.activation}, {"activation_dtype", dtype_name(c.model.activation_dtype)},
               {"t", m.t}, {"sp", m.sp}, {"flash", m.flash}, {"attention_dropout", c.model.attention_dropout},
               {"hidden_dropout", c.model.hidden_dropout}, {"pp", c.parallel.pipeline_model_parallel_size},
               {"micro_batches", c.run.micro_batches}};
  j["recompute"] = recompute_description(c);

  const LayerMemory full = layer_memory(m);
  json layer = {{"tensors", tensors_json(full)}, {"total", full.total()}, {"sbh_coefficient", full.total() / sbh}};
  layer["groups"] = {{"attention", full.prefix_bytes("attention.")},
                     {"mlp", full.prefix_bytes("mlp.")},
                     {"layernorm", full.prefix_bytes("input_layernorm.") + full.prefix_bytes("pre_mlp_layernorm.")}};
  if (r.recompute_granularity == "selective") {
    const LayerMemory sel = layer_memory(m, r.recompute_modules);
    layer["selective"] = {{"tensors", tensors_json(sel)}, {"total", sel.total()}};
  }
  j["layer"] = layer;

  j["stage"] = {{"per_layer_bytes", st.per_layer_bytes()}, {"roles", st.roles},
                {"full_layer_bytes", st.full_layer_bytes}, {"chunk_input_bytes", st.chunk_input_bytes},
                {"stored_bytes", st.stored_bytes}, {"peak_backward_bytes", st.peak_backward_bytes},
                {"in_flight", st.in_flight}, {"in_flight_bytes", st.in_flight_bytes},
                {"peak_in_flight_bytes", st.peak_in_flight_bytes}};

  // Korthikanti Table 2 rows at this config's t (SP rows need s % t == 0).
  json variants = json::array();
  auto variant = [&](const std::string& name, int64_t t, bool sp, const std::vector<std::string>& sel, bool chunk) {
    MemoryDims v = m;
    v.t = t;
    v.sp = sp;
    const int64_t bytes = chunk ? chunk_input_memory(v, false).total() : layer_memory(v, sel).total();
    variants.push_back({{"name", name}, {"layer_bytes", bytes}, {"stage_bytes", checked_mul(bytes, L, "stage bytes")},
                        {"sbh_coefficient", bytes / sbh}});
  };
  const std::string tp = "TP=" + std::to_string(m.t);
  variant("no parallelism", 1, false, {}, false);
  variant(tp, m.t, false, {}, false);
  variant(tp + " + selective core_attn", m.t, false, {"core_attn"}, false);
  if (m.s % m.t == 0) {
    variant(tp + " + SP", m.t, true, {}, false);
    variant(tp + " + SP + selective core_attn", m.t, true, {"core_attn"}, false);
    variant(tp + " + SP + full recompute (chunk input)", m.t, true, {}, true);
  } else {
    variant(tp + " + full recompute (chunk input)", m.t, false, {}, true);
  }
  j["variants"] = variants;

  const CheckpointOptimum o = checkpoint_optimum(L, st.full_layer_bytes, st.chunk_input_bytes);
  j["checkpoint_optimum"] = {{"L", L}, {"A", st.full_layer_bytes}, {"c", st.chunk_input_bytes},
                             {"k_star", o.k_star}, {"peak_at_k_star", o.peak_at_k_star}, {"k_best", o.k_best},
                             {"layers_per_segment", o.layers_per_segment}, {"peak_best", o.peak_best}};

  const LayerFlops f = layer_flops(m);
  j["flops"] = {{"layer_forward", f.total()},
                {"layer", {{"qkv", f.qkv}, {"scores", f.scores}, {"context", f.context}, {"proj", f.proj},
                           {"fc1", f.fc1}, {"fc2", f.fc2}}},
                {"full", overhead_json(recompute_overhead(m, L, L, {}))},
                {"selective_core_attn", overhead_json(recompute_overhead(m, L, 0, {"core_attn"}))},
                {"s_over_6h", static_cast<double>(m.s) / (6.0 * static_cast<double>(m.h))},
                {"this_config", overhead_json(recompute_overhead(c))}};
  return j;
}

std::string memory_report_text(const Config& c) {
  const json j = memory_report_json(c);
  const json& d = j["dims"];
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };

  line("rcts activation memory model (Korthikanti et al. 2022): saved bytes per rank, one micro-batch");
  line(fmt("  s=%lld b=%lld h=%lld a=%lld ffn=%lld L=%d activation=%s dtype=%s (d=%lld)",
           d["s"].get<long long>(), d["b"].get<long long>(), d["h"].get<long long>(), d["a"].get<long long>(),
           d["ffn"].get<long long>(), d["L"].get<int>(), d["activation"].get<std::string>().c_str(),
           d["activation_dtype"].get<std::string>().c_str(), d["d"].get<long long>()));
  line(fmt("  TP=%lld SP=%s flash=%s attention_dropout=%g hidden_dropout=%g PP=%d micro_batches=%d",
           d["t"].get<long long>(), d["sp"].get<bool>() ? "on" : "off", d["flash"].get<bool>() ? "on" : "off",
           d["attention_dropout"].get<double>(), d["hidden_dropout"].get<double>(), d["pp"].get<int>(),
           d["micro_batches"].get<int>()));
  line("  recompute: " + j["recompute"].get<std::string>());
  line("");

  const json& layer = j["layer"];
  const bool sel = layer.contains("selective");
  line("One layer, no recompute (this TP/SP layout):");
  line(fmt("  %-30s %-12s %14s %10s  %s", "tensor", "formula", "bytes", "MiB", sel ? "kept (selective)" : ""));
  for (const auto& t : layer["tensors"]) {
    std::string kept;
    if (sel) {
      kept = "-";
      for (const auto& k : layer["selective"]["tensors"])
        if (k["name"] == t["name"])
          kept = fmt("%.2f MiB%s", mib(k["bytes"].get<int64_t>()),
                     k["kind"] == "checkpoint_input" ? " (checkpoint input)" : "");
    }
    line(fmt("  %-30s %-12s %14lld %10.2f  %s", t["name"].get<std::string>().c_str(),
             t["formula"].get<std::string>().c_str(), ll(t["bytes"].get<int64_t>()), mib(t["bytes"].get<int64_t>()),
             kept.c_str()));
  }
  for (const char* g : {"attention", "mlp", "layernorm"})
    line(fmt("  %-30s %-12s %14lld %10.2f", (std::string("subtotal ") + g).c_str(), "",
             ll(layer["groups"][g].get<int64_t>()), mib(layer["groups"][g].get<int64_t>())));
  line(fmt("  %-30s %-12s %14lld %10.2f  %s", "total", fmt("%.3f*sbh", layer["sbh_coefficient"].get<double>()).c_str(),
           ll(layer["total"].get<int64_t>()), mib(layer["total"].get<int64_t>()),
           sel ? fmt("%.2f MiB", mib(layer["selective"]["total"].get<int64_t>())).c_str() : ""));
  line("");

  const json& st = j["stage"];
  line("Stage under this config's recompute (layers with equal bytes and role grouped):");
  line(fmt("  %-10s %14s %10s  %s", "layers", "bytes/layer", "MiB", "role"));
  const auto bytes = st["per_layer_bytes"].get<std::vector<int64_t>>();
  const auto roles = st["roles"].get<std::vector<std::string>>();
  for (size_t i = 0; i < bytes.size();) {
    size_t e = i + 1;
    while (e < bytes.size() && bytes[e] == bytes[i] && roles[e] == roles[i]) ++e;
    const std::string span = e - i == 1 ? std::to_string(i) : std::to_string(i) + "-" + std::to_string(e - 1);
    line(fmt("  %-10s %14lld %10.2f  %s", span.c_str(), ll(bytes[i]), mib(bytes[i]), roles[i].c_str()));
    i = e;
  }
  auto total = [&](const std::string& name, int64_t v) {
    line(fmt("  %-38s %16lld %12.2f MiB", name.c_str(), ll(v), mib(v)));
  };
  total("stored (one micro-batch)", st["stored_bytes"].get<int64_t>());
  total("peak in backward (one micro-batch)", st["peak_backward_bytes"].get<int64_t>());
  total(fmt("in flight: P=%d micro-batches (1F1B)", st["in_flight"].get<int>()), st["in_flight_bytes"].get<int64_t>());
  total("peak with P in flight", st["peak_in_flight_bytes"].get<int64_t>());
  line("");

  line(fmt("Variants at t=%lld (Korthikanti Table 2), per layer and for L=%d layers:", d["t"].get<long long>(),
           d["L"].get<int>()));
  line(fmt("  %-42s %14s %10s %10s %11s", "variant", "bytes/layer", "MiB", "x sbh", "L layers"));
  for (const auto& v : j["variants"])
    line(fmt("  %-42s %14lld %10.2f %10.3f %7.2f GiB", v["name"].get<std::string>().c_str(),
             ll(v["layer_bytes"].get<int64_t>()), mib(v["layer_bytes"].get<int64_t>()),
             v["sbh_coefficient"].get<double>(), mib(v["stage_bytes"].get<int64_t>()) / 1024.0));
  line("");

  const json& o = j["checkpoint_optimum"];
  line("Checkpoint segments (c = chunk input, A = one layer without recompute):");
  line(fmt("  c = %lld bytes (%.2f MiB), A = %lld bytes (%.2f MiB), L = %d", ll(o["c"].get<int64_t>()),
           mib(o["c"].get<int64_t>()), ll(o["A"].get<int64_t>()), mib(o["A"].get<int64_t>()), o["L"].get<int>()));
  const bool beyond = o["k_star"].get<double>() > o["L"].get<double>();
  line(fmt("  k* = sqrt(L*A/c) = %.3f, peak 2*sqrt(L*A*c) = %.2f MiB%s", o["k_star"].get<double>(),
           o["peak_at_k_star"].get<double>() / (1024.0 * 1024.0),
           beyond ? " (k* > L: unreachable, one layer per segment is the most)" : ""));
  line(fmt("  best integer k = %d (ceil(L/k) = %d layer(s) per segment): peak k*c + ceil(L/k)*A = %lld bytes (%.2f MiB)",
           o["k_best"].get<int>(), o["layers_per_segment"].get<int>(), ll(o["peak_best"].get<int64_t>()),
           mib(o["peak_best"].get<int64_t>())));
  line("");

  const json& f = j["flops"];
  line(fmt("Recompute FLOPs (matmul only; step without recompute = 3F): layer forward F = %.4g",
           static_cast<double>(f["layer_forward"].get<int64_t>())));
  auto flops = [&](const char* name, const json& x) {
    line(fmt("  %-26s recompute/forward = %.4f   step ratio = %.4f", name, x["recompute_ratio"].get<double>(),
             x["step_ratio"].get<double>()));
  };
  flops("full", f["full"]);
  flops("selective core_attn", f["selective_core_attn"]);
  line(fmt("  %-26s s/(6h) = %.4f (the paper's approximation of the ratio above)", "", f["s_over_6h"].get<double>()));
  flops("this config", f["this_config"]);
  return out;
}

}  // namespace rcts
