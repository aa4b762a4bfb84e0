// Strict JSON reading and writing of Config. Each section's fields are listed once,
// in a visit_* function that the key check, the reader and the writer share, so a
// new field cannot be readable but not writable (or silently unknown).
#include "reference/config/config_json.hpp"

#include <limits>
#include <set>
#include <type_traits>

#include "reference/config/config_error.hpp"
#include "reference/config/validate.hpp"

namespace rcts {
namespace {

using nlohmann::json;

// ---- field lists ---------------------------------------------------------------------
template <class M, class V> void visit_model(M& m, V&& v) {
  v("num_layers", m.num_layers);
  v("hidden_size", m.hidden_size);
  v("num_attention_heads", m.num_attention_heads);
  v("seq_length", m.seq_length);
  v("micro_batch_size", m.micro_batch_size);
  v("ffn_hidden_size", m.ffn_hidden_size);
  v("activation", m.activation);
  v("attention_dropout", m.attention_dropout);
  v("hidden_dropout", m.hidden_dropout);
  v("activation_dtype", m.activation_dtype);
  v("layernorm_epsilon", m.layernorm_epsilon);
  v("flash_attention", m.flash_attention);
  v("num_moe_experts", m.num_moe_experts);
  v("moe_router_topk", m.moe_router_topk);
  v("moe_grouped_gemm", m.moe_grouped_gemm);
  v("moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size);
  v("moe_shared_expert_overlap", m.moe_shared_expert_overlap);
  v("overlap_moe_expert_parallel_comm", m.overlap_moe_expert_parallel_comm);
  v("moe_ffn_hidden_size", m.moe_ffn_hidden_size);
  v("moe_layer_freq", m.moe_layer_freq);
  v("moe_expert_dropout", m.moe_expert_dropout);
  v("moe_aux_loss_coeff", m.moe_aux_loss_coeff);
  v("multi_latent_attention", m.multi_latent_attention);
  v("gated_delta_net", m.gated_delta_net);
  v("fp8", m.fp8);
  v("fp8_recipe", m.fp8_recipe);
  v("fp8_amax_history_len", m.fp8_amax_history_len);
  v("fp8_amax_compute_algo", m.fp8_amax_compute_algo);
  v("fp8_margin", m.fp8_margin);
  v("cuda_graph_impl", m.cuda_graph_impl);
  v("cuda_graph_scope", m.cuda_graph_scope);
}

template <class P, class V> void visit_parallel(P& p, V&& v) {
  v("tensor_model_parallel_size", p.tensor_model_parallel_size);
  v("pipeline_model_parallel_size", p.pipeline_model_parallel_size);
  v("expert_model_parallel_size", p.expert_model_parallel_size);
  v("expert_tensor_parallel_size", p.expert_tensor_parallel_size);
  v("sequence_parallel", p.sequence_parallel);
}

template <class R, class V> void visit_recompute(R& r, V&& v) {
  v("recompute_granularity", r.recompute_granularity);
  v("recompute_method", r.recompute_method);
  v("recompute_num_layers", r.recompute_num_layers);
  v("recompute_modules", r.recompute_modules);
  v("distribute_saved_activations", r.distribute_saved_activations);
  v("moe_layer_recompute", r.moe_layer_recompute);
}

template <class O, class V> void visit_offload(O& o, V&& v) {
  v("fine_grained_activation_offloading", o.fine_grained_activation_offloading);
  v("offload_modules", o.offload_modules);
  v("min_offloaded_tensor_size", o.min_offloaded_tensor_size);
  v("cpu_offloading", o.cpu_offloading);
  v("cpu_offloading_num_layers", o.cpu_offloading_num_layers);
  v("max_inflight_offloads", o.max_inflight_offloads);
  v("link_bandwidth_gbps", o.link_bandwidth_gbps);
  v("link_latency_us", o.link_latency_us);
}

template <class R, class V> void visit_run(R& r, V&& v) {
  v("seed", r.seed);
  v("micro_batches", r.micro_batches);
  v("steps", r.steps);
  v("training", r.training);
}

// Calls f(section name, visit function) for each section of `c`.
template <class C, class F> void visit_sections(C& c, F&& f) {
  f("model", [&](auto&& v) { visit_model(c.model, v); });
  f("parallel", [&](auto&& v) { visit_parallel(c.parallel, v); });
  f("recompute", [&](auto&& v) { visit_recompute(c.recompute, v); });
  f("offload", [&](auto&& v) { visit_offload(c.offload, v); });
  f("run", [&](auto&& v) { visit_run(c.run, v); });
}

// ---- reading -------------------------------------------------------------------------
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

[[noreturn]] void fail(const std::string& where, const std::string& code, const std::string& path,
                       const std::string& what, const json& value) {
  throw ConfigError(code, path, where + ": " + (path.empty() ? "/" : path) + ": " + what + " (got " +
                                    shown(value) + ")");
}

struct Reader {
  const std::string& where;

  template <class Int> void integer(const json& v, const std::string& path, Int& out) {
    if (!v.is_number_integer()) fail(where, "json.type", path, "expected an integer", v);
    bool fits;
    if (v.is_number_unsigned()) {
      fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
    } else if constexpr (std::is_unsigned_v<Int>) {
      fits = v.get<int64_t>() >= 0;
    } else {
      const int64_t i = v.get<int64_t>();
      fits = i >= std::numeric_limits<Int>::min() && i <= std::numeric_limits<Int>::max();
    }
    if (!fits) fail(where, "json.range", path, "integer out of range for this field", v);
    out = v.is_number_unsigned() ? static_cast<Int>(v.get<uint64_t>()) : static_cast<Int>(v.get<int64_t>());
  }
  void read(const json& v, const std::string& path, int& out) { integer(v, path, out); }
  void read(const json& v, const std::string& path, int64_t& out) { integer(v, path, out); }
  void read(const json& v, const std::string& path, uint64_t& out) { integer(v, path, out); }
  void read(const json& v, const std::string& path, double& out) {
    if (!v.is_number()) fail(where, "json.type", path, "expected a number", v);
    out = v.get<double>();
  }
  void read(const json& v, const std::string& path, bool& out) {
    if (!v.is_boolean()) fail(where, "json.type", path, "expected true or false", v);
    out = v.get<bool>();
  }
  void read(const json& v, const std::string& path, std::string& out) {
    if (!v.is_string()) fail(where, "json.type", path, "expected a string", v);
    out = v.get<std::string>();
  }
  void read(const json& v, const std::string& path, DType& out) {
    if (!v.is_string()) fail(where, "json.type", path, "expected a string (bf16, f32 or f64)", v);
    const auto s = v.get<std::string>();
    for (DType t : {DType::bf16, DType::f32, DType::f64})
      if (dtype_name(t) == s) {
        out = t;
        return;
      }
    fail(where, "model.activation_dtype", path, "activation dtype must be bf16, f32 or f64", v);
  }
  void read(const json& v, const std::string& path, std::vector<std::string>& out) {
    if (!v.is_array()) fail(where, "json.type", path, "expected an array of strings", v);
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) read(v[i], path + "/" + std::to_string(i), out.emplace_back());
  }
  template <class T> void read(const json& v, const std::string& path, std::optional<T>& out) {
    if (v.is_null()) {
      out.reset();
      return;
    }
    T x{};
    read(v, path, x);
    out = std::move(x);
  }
};

void read_section(const json& obj, const std::string& path, const std::string& where, auto&& visit) {
  if (!obj.is_object()) fail(where, "json.type", path, "expected an object", obj);
  std::set<std::string> known;
  visit([&](const char* name, auto&) { known.insert(name); });
  for (const auto& [key, value] : obj.items())
    if (!known.count(key)) {
      std::string legal;
      for (const auto& k : known) legal += (legal.empty() ? "" : ", ") + k;
      fail(where, "json.unknown_key", path + "/" + key, "unknown key '" + key + "' (known: " + legal + ")", value);
    }
  Reader r{where};
  visit([&](const char* name, auto& field) {
    auto it = obj.find(name);
    if (it != obj.end()) r.read(*it, path + "/" + name, field);
  });
}

// ---- writing -------------------------------------------------------------------------
json to_value(int v) { return v; }
json to_value(int64_t v) { return v; }
json to_value(uint64_t v) { return v; }
json to_value(double v) { return v; }
json to_value(bool v) { return v; }
json to_value(const std::string& v) { return v; }
json to_value(DType v) { return std::string(dtype_name(v)); }
json to_value(const std::vector<std::string>& v) { return v; }
template <class T> json to_value(const std::optional<T>& v) { return v ? to_value(*v) : json(nullptr); }

}  // namespace

Config config_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, "json.type", "", "expected a config object", j);
  Config c;
  std::set<std::string> sections;
  visit_sections(c, [&](const char* name, auto&&) { sections.insert(name); });
  for (const auto& [key, value] : j.items())
    if (!sections.count(key))
      fail(where, "json.unknown_key", "/" + key,
           "unknown section '" + key + "' (known: model, parallel, recompute, offload, run)", value);
  visit_sections(c, [&](const char* name, auto&& visit) {
    auto it = j.find(name);
    if (it != j.end()) read_section(*it, std::string("/") + name, where, visit);
  });

  // Value domains of single fields, reported at the JSON value.
  auto issues = validate_fields(c);
  if (!issues.empty()) {
    const ConfigIssue& i = issues.front();
    std::string path = i.fields.empty() ? "" : field_to_json_path(i.fields.front());
    json::json_pointer ptr(path);
    std::string value = j.contains(ptr) ? " = " + shown(j.at(ptr)) : "";
    throw ConfigError(i.code, path, where + ": " + path + value + ": " + i.message + " [" + i.code + "]",
                      issues);
  }
  return c;
}

json config_to_json(const Config& c) {
  json j = json::object();
  visit_sections(c, [&](const char* name, auto&& visit) {
    json s = json::object();
    visit([&](const char* key, const auto& field) { s[key] = to_value(field); });
    j[name] = std::move(s);
  });
  return j;
}

Config apply_overrides(const Config& base, const json& patch, const std::string& where) {
  if (!patch.is_object()) fail(where, "json.type", "", "expected a config object to merge", patch);
  json j = config_to_json(base);
  for (const auto& [section, value] : patch.items()) {
    if (!value.is_object() || !j.contains(section)) {
      j[section] = value;  // config_from_json reports the unknown section or the type
      continue;
    }
    for (const auto& [key, v] : value.items()) j[section][key] = v;
  }
  return config_from_json(j, where);
}

}  // namespace rcts
