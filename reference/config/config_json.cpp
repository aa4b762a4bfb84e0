// Strict JSON reading and writing of Config. Each section's fields are listed once,
// in a visit_* function that the key check, the reader and the writer share, so a
// new field cannot be readable but not writable (or silently unknown).
#include "reference/config/config_json.hpp"

#include <limits>
#include <map>
#include <set>
#include <type_traits>

#include "reference/config/config_error.hpp"
#include "reference/config/megatron_defaults.hpp"
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
  v("add_bias_linear", m.add_bias_linear);
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
  v("q_lora_rank", m.q_lora_rank);
  v("kv_lora_rank", m.kv_lora_rank);
  v("qk_head_dim", m.qk_head_dim);
  v("qk_pos_emb_head_dim", m.qk_pos_emb_head_dim);
  v("v_head_dim", m.v_head_dim);
  v("rotary_base", m.rotary_base);
  v("gated_delta_net", m.gated_delta_net);
  v("linear_attention_freq", m.linear_attention_freq);
  v("linear_attention_pattern", m.linear_attention_pattern);
  v("linear_conv_kernel_dim", m.linear_conv_kernel_dim);
  v("linear_key_head_dim", m.linear_key_head_dim);
  v("linear_value_head_dim", m.linear_value_head_dim);
  v("linear_num_key_heads", m.linear_num_key_heads);
  v("linear_num_value_heads", m.linear_num_value_heads);
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
// Every problem is collected, not thrown at once, so one run names them all (a pasted
// config with five wrong keys gets five messages, not five tries).
std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

struct Problems {
  const std::string& where;
  const std::string& at;  // JSON pointer of the config object inside `where` ("/config" in a case file)
  std::vector<ConfigIssue> issues;
  std::vector<std::string> paths;  // JSON pointer of each issue
  std::string text;

  void add(const std::string& code, const std::string& path, const std::string& what, const json& value,
           const std::string& field = "") {
    issues.push_back({code, ((at + path).empty() ? std::string("/") : at + path) + ": " + what + " (got " + shown(value) + ")",
                      field.empty() ? std::vector<std::string>{} : std::vector<std::string>{field}});
    paths.push_back(path);
    line(where + ": " + issues.back().message);
  }
  // The message shows the first kShown problems (a hostile file may hold millions);
  // issues() keeps them all.
  static constexpr size_t kShown = 50;
  void line(const std::string& l) {
    if (issues.size() <= kShown) text += (text.empty() ? "" : "\n") + l;
  }
  void throw_if_any() const {
    if (issues.empty()) return;
    std::string msg = issues.size() == 1 ? text : std::to_string(issues.size()) + " problems in " + where + ":\n" + text;
    if (issues.size() > kShown) msg += "\n... and " + std::to_string(issues.size() - kShown) + " more";
    throw ConfigError(issues.front().code, paths.front(), msg, issues);
  }
};

struct Reader {
  Problems& p;

  // Records a problem (and leaves `out` as it was) when v is not an integer that fits Int.
  template <class Int> void integer(const json& v, const std::string& path, Int& out) {
    if (!v.is_number_integer()) return p.add("json.type", path, "expected an integer", v);
    bool fits;
    if (v.is_number_unsigned()) {
      fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
    } else if constexpr (std::is_unsigned_v<Int>) {
      fits = v.get<int64_t>() >= 0;
    } else {
      const int64_t i = v.get<int64_t>();
      fits = i >= std::numeric_limits<Int>::min() && i <= std::numeric_limits<Int>::max();
    }
    if (!fits) return p.add("json.range", path, "integer out of range for this field", v);
    out = v.is_number_unsigned() ? static_cast<Int>(v.get<uint64_t>()) : static_cast<Int>(v.get<int64_t>());
  }
  void read(const json& v, const std::string& path, int& out) { integer(v, path, out); }
  void read(const json& v, const std::string& path, int64_t& out) { integer(v, path, out); }
  void read(const json& v, const std::string& path, uint64_t& out) { integer(v, path, out); }
  void read(const json& v, const std::string& path, double& out) {
    if (!v.is_number()) return p.add("json.type", path, "expected a number", v);
    out = v.get<double>();
  }
  void read(const json& v, const std::string& path, bool& out) {
    if (!v.is_boolean()) return p.add("json.type", path, "expected true or false", v);
    out = v.get<bool>();
  }
  void read(const json& v, const std::string& path, std::string& out) {
    if (!v.is_string()) return p.add("json.type", path, "expected a string", v);
    out = v.get<std::string>();
  }
  void read(const json& v, const std::string& path, DType& out) {
    if (!v.is_string()) return p.add("json.type", path, "expected a string (bf16, f32 or f64)", v);
    const auto s = v.get<std::string>();
    for (DType t : {DType::bf16, DType::f32, DType::f64})
      if (dtype_name(t) == s) {
        out = t;
        return;
      }
    p.add("model.activation_dtype", path, "activation dtype must be bf16, f32 or f64", v);
  }
  void read(const json& v, const std::string& path, std::vector<std::string>& out) {
    if (!v.is_array()) return p.add("json.type", path, "expected an array of strings", v);
    std::vector<std::string> items;
    for (size_t i = 0; i < v.size(); ++i) read(v[i], path + "/" + std::to_string(i), items.emplace_back());
    out = std::move(items);
  }
  void read(const json& v, const std::string& path, std::vector<int>& out) {
    if (!v.is_array()) return p.add("json.type", path, "expected an array of integers", v);
    std::vector<int> items;
    for (size_t i = 0; i < v.size(); ++i) read(v[i], path + "/" + std::to_string(i), items.emplace_back());
    out = std::move(items);
  }
  template <class T> void read(const json& v, const std::string& path, std::optional<T>& out) {
    if (v.is_null()) {
      out.reset();
      return;
    }
    T x{};
    const size_t before = p.issues.size();
    read(v, path, x);
    if (p.issues.size() == before) out = std::move(x);
  }
};

// One key given to a section: its value and the JSON pointer it was written at (a
// nested "/model/hidden_size" or a flat "/hidden_size").
struct Entry {
  const json* value;
  std::string path;
};

// Megatron-LM's default FFN size when a config names none (megatron/training/arguments.py,
// validate_args; docs/megatron.md): 4h, or for SwiGLU int(4h * 2/3 / 64) * 64. A hidden
// size outside its domain keeps the built-in default (its own problem is reported).
void default_ffn(Config& c, Problems& p) {
  const int h = c.model.hidden_size;
  if (h < 1) return;
  const int64_t ffn = megatron_default_ffn_hidden_size(h, c.model.activation == "swiglu");
  if (ffn > std::numeric_limits<int>::max()) {
    p.add("model.size_range", "/model/ffn_hidden_size",
          "the default ffn_hidden_size (Megatron-LM's, from hidden_size = " + std::to_string(h) + ") is " +
              std::to_string(ffn) + ", out of range: set ffn_hidden_size",
          json(nullptr), "model.ffn_hidden_size");
    return;
  }
  c.model.ffn_hidden_size = static_cast<int>(ffn);
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
json to_value(const std::vector<int>& v) { return v; }
template <class T> json to_value(const std::optional<T>& v) { return v ? to_value(*v) : json(nullptr); }

}  // namespace

Config config_from_json(const json& j, const std::string& where, const std::string& at) {
  Problems problems{where, at, {}, {}, {}};
  if (!j.is_object()) {
    problems.add("json.type", "", "expected a config object", j);
    problems.throw_if_any();
  }
  Config c;
  // Keys a section takes, and which section each field name belongs to (field names are
  // unique across sections, so a flat object {"hidden_size": ...} is unambiguous).
  std::map<std::string, std::set<std::string>> known;
  std::map<std::string, std::string> section_of;
  visit_sections(c, [&](const char* name, auto&& visit) {
    visit([&](const char* key, auto&) {
      known[name].insert(key);
      section_of[key] = name;
    });
  });
  auto legal = [](const std::set<std::string>& names) {
    std::string s;
    for (const auto& k : names) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  std::map<std::string, std::map<std::string, Entry>> given;  // section -> key -> entry
  auto give = [&](const std::string& section, const std::string& key, const json& value, const std::string& path) {
    auto [it, fresh] = given[section].emplace(key, Entry{&value, path});
    if (!fresh)
      problems.add("json.duplicate_key", path,
                   "'" + key + "' is given twice (also at " + it->second.path + ")", value,
                   section + "." + key);
  };
  for (const auto& [key, value] : j.items()) {
    if (known.count(key)) {
      if (!value.is_object()) {
        problems.add("json.type", "/" + key, "expected an object", value);
        continue;
      }
      for (const auto& [k, v] : value.items()) {
        if (known[key].count(k))
          give(key, k, v, "/" + key + "/" + k);
        else
          problems.add("json.unknown_key", "/" + key + "/" + k,
                       "unknown key '" + k + "' (known: " + legal(known[key]) + ")", v);
      }
    } else if (auto s = section_of.find(key); s != section_of.end()) {
      give(s->second, key, value, "/" + key);
    } else {
      problems.add("json.unknown_key", "/" + key,
                   "unknown section '" + key +
                       "' (known: model, parallel, recompute, offload, run; their keys may also stand at the top level)",
                   value);
    }
  }
  Reader r{problems};
  std::map<std::string, std::string> path_of;  // "section.key" -> where it was written
  visit_sections(c, [&](const char* name, auto&& visit) {
    visit([&](const char* key, auto& field) {
      auto& entries = given[name];
      auto it = entries.find(key);
      if (it == entries.end()) return;
      path_of[std::string(name) + "." + key] = it->second.path;
      r.read(*it->second.value, it->second.path, field);
    });
  });
  if (!given["model"].count("ffn_hidden_size")) default_ffn(c, problems);

  // Value domains of single fields, reported at the JSON value (fields already reported
  // as unreadable keep their default and give no second message).
  std::set<std::string> reported(problems.paths.begin(), problems.paths.end());
  for (const ConfigIssue& i : validate_fields(c)) {
    const std::string field = i.fields.empty() ? "" : i.fields.front();
    const std::string path = path_of.count(field) ? path_of[field] : field_to_json_path(field);
    if (reported.count(path)) continue;
    const json* value = nullptr;
    if (auto s = section_of.find(field.substr(field.find('.') + 1)); s != section_of.end()) {
      auto& entries = given[s->second];
      if (auto e = entries.find(s->first); e != entries.end()) value = e->second.value;
    }
    problems.issues.push_back(i);
    problems.paths.push_back(path);
    problems.line(where + ": " + at + path + (value ? " = " + shown(*value) : std::string()) + ": " + i.message + " [" +
                  i.code + "]");
  }
  problems.throw_if_any();
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

Config apply_overrides(const Config& base, const json& patch, const std::string& where, const std::string& at) {
  if (!patch.is_object()) {
    Problems p{where, at, {}, {}, {}};
    p.add("json.type", "", "expected a config object to merge", patch);
    p.throw_if_any();
  }
  json j = config_to_json(base);
  std::map<std::string, std::string> section_of;
  for (const auto& [section, keys] : j.items())
    for (const auto& [key, v] : keys.items()) section_of[key] = section;
  for (const auto& [key, value] : patch.items()) {
    if (auto s = section_of.find(key); !j.contains(key) && s != section_of.end()) {
      j[s->second][key] = value;  // a flat key replaces its section's value
      continue;
    }
    if (!value.is_object() || !j.contains(key)) {
      j[key] = value;  // config_from_json reports the unknown section or the type
      continue;
    }
    for (const auto& [k, v] : value.items()) j[key][k] = v;
  }
  return config_from_json(j, where, at);
}

}  // namespace rcts
