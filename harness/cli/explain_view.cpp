#include "harness/cli/explain_view.hpp"

#include <sstream>

#include "harness/cases/case_config.hpp"
#include "harness/checks/checks.hpp"
#include "harness/cli/view_json.hpp"
#include "reference/config/config_json.hpp"
#include "reference/driver/execute.hpp"
#include "reference/parallel/groups.hpp"
#include "reference/recompute/plan.hpp"

namespace rcts::harness {

namespace {

using nlohmann::json;

bool offloads(const Config& cfg) { return cfg.offload.fine_grained_activation_offloading || cfg.offload.cpu_offloading; }

ConfigExplanation explain_config(const Case& c, const std::string& label, bool variant, const Config& cfg,
                                 Backend& backend, const RunLimits& limits) {
  ConfigExplanation x;
  x.label = label;
  x.variant = variant;
  x.config = cfg;
  x.plan = recompute_plan(cfg);
  if (offloads(cfg)) {
    Config dry = cfg;
    dry.run.steps = 1;
    dry.run.micro_batches = 2;
    check_run_limits(dry, "case " + c.id + " (" + label + ", dry run for the offload plan)", limits);
    const RunRecord r = execute(dry, backend, c.seed_ranks);
    x.offload = ConfigExplanation::Offload{r.offload->margin_groups, r.offload->tensors};
  }
  if (cfg.model.num_moe_experts == 0) x.expected = stage_memory(cfg);
  return x;
}

// --- text ------------------------------------------------------------------------

void list_to(std::ostream& os, const auto& items, const char* sep) {
  for (size_t i = 0; i < items.size(); ++i) os << (i ? sep : "") << items[i];
}

void config_text(std::ostream& os, const ConfigExplanation& x) {
  const Config& cfg = x.config;
  const auto& m = cfg.model;
  const auto& r = cfg.recompute;
  os << "\n  [" << (x.variant ? "variant " + x.label : x.label) << "]\n";
  os << "    model: L=" << m.num_layers << " h=" << m.hidden_size << " a=" << m.num_attention_heads << " s=" << m.seq_length
     << " b=" << m.micro_batch_size << " ffn=" << m.ffn_hidden_size << " " << m.activation << " "
     << dtype_name(m.activation_dtype) << " dropout attn=" << m.attention_dropout << " hidden=" << m.hidden_dropout
     << "\n";
  if (m.multi_latent_attention)
    os << "    mla (design §14): q_lora_rank=" << m.q_lora_rank << " kv_lora_rank=" << m.kv_lora_rank
       << " qk_head_dim=" << m.qk_head_dim << " qk_pos_emb_head_dim=" << m.qk_pos_emb_head_dim
       << " v_head_dim=" << m.v_head_dim << " rotary_base=" << m.rotary_base << "\n";
  if (m.gated_delta_net) {
    os << "    layers (G = gated delta net, A = attention; design §15):";
    for (int i = 0; i < m.num_layers; ++i) os << (cfg.gdn_layer(i) ? " G" : " A");
    os << "\n    gdn: key heads=" << m.linear_num_key_heads << " dk=" << m.linear_key_head_dim
       << " value heads=" << m.linear_num_value_heads << " dv=" << m.linear_value_head_dim
       << " conv=" << m.linear_conv_kernel_dim << "\n";
  }
  os << "    run: seed=" << cfg.run.seed << " steps=" << cfg.run.steps << " micro_batches=" << cfg.run.micro_batches
     << (cfg.run.training ? " training" : " eval") << "\n";
  os << "    recompute: " << r.recompute_granularity.value_or("none");
  if (r.recompute_method) os << " method=" << *r.recompute_method;
  if (r.recompute_num_layers) os << " num_layers=" << *r.recompute_num_layers;
  if (r.recompute_granularity == "selective") {
    os << " modules=[";
    list_to(os, r.recompute_modules, ", ");
    os << "]";
  }
  os << "\n    plan (segments, * = checkpointed): " << plan_str(x.plan) << "\n";
  if (x.offload) {
    os << "    offload (threshold " << cfg.offload.min_offloaded_tensor_size << " elements; margin groups:";
    for (const auto& g : x.offload->margin_groups) os << ' ' << g;
    os << "):\n";
    std::map<std::string, std::vector<std::string>> by_group;
    for (const auto& t : x.offload->tensors)
      by_group[t.group].push_back(t.tensor + " (" + std::to_string(t.numel) + ")" +
                                  (t.offloaded ? "" : " kept: " + t.kept_because));
    for (const auto& [g, list] : by_group) {
      os << "      " << g << ":";
      for (const auto& t : list) os << "\n        " << t;
      os << "\n";
    }
  } else {
    os << "    offloaded modules: none\n";
  }
  if (!x.expected) {
    os << "    expected saved bytes: the analytic model covers dense layers only\n";
    return;
  }
  os << "    expected saved bytes per layer:";
  for (auto b : x.expected->per_layer_bytes()) os << ' ' << b;
  os << "  (total " << x.expected->stored_bytes << ", backward peak " << x.expected->peak_backward_bytes << ")\n";
}

// --- JSON ------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(' ') != std::string::npos) out.push_back(line.substr(line.find_first_not_of(' ')));
  return out;
}

json config_json(const ConfigExplanation& x) {
  const Config& cfg = x.config;
  json j = {{"label", x.label}, {"config", config_to_json(cfg)}};
  j["plan"] = plan_json(x.plan);
  j["plan_text"] = plan_str(x.plan);
  const auto& r = cfg.recompute;
  j["recompute"] = {{"granularity", r.recompute_granularity ? json(*r.recompute_granularity) : json(nullptr)},
                    {"modules", r.recompute_granularity == "selective" ? json(r.recompute_modules) : json::array()}};
  if (x.offload) {
    json groups = json::object();
    for (const auto& t : x.offload->tensors)
      groups[t.group].push_back({{"tensor", t.tensor},
                                 {"numel", t.numel},
                                 {"offloaded", t.offloaded},
                                 {"kept_because", t.offloaded ? json(nullptr) : json(t.kept_because)}});
    j["offload"] = {{"threshold_elements", cfg.offload.min_offloaded_tensor_size},
                    {"margin_groups", x.offload->margin_groups},
                    {"groups", groups}};
  } else {
    j["offload"] = nullptr;
  }
  if (!x.expected) {
    j["expected_saved_bytes"] = {{"modelled", false}, {"why", "the analytic model covers dense layers only"}};
  } else {
    j["expected_saved_bytes"] = {{"modelled", true},
                                 {"per_layer", x.expected->per_layer_bytes()},
                                 {"total", x.expected->stored_bytes},
                                 {"backward_peak", x.expected->peak_backward_bytes}};
  }
  return j;
}

}  // namespace

CaseExplanation explain(const Case& c, Backend& backend, const RunLimits& limits) {
  CaseExplanation x;
  x.c = &c;
  if (c.expect.config_error) return x;
  const Config base = case_config(c, nullptr);
  x.seed = base.run.seed;
  x.model_parallel_seed = expected_stream_seed("model-parallel-rng", base.run.seed, c.seed_ranks);
  x.expert_parallel_seed = expected_stream_seed("expert-parallel-rng", base.run.seed, c.seed_ranks);
  const auto& par = base.parallel;
  for (int w : c.ranks) {
    if (w == 1) continue;
    CaseExplanation::Groups g;
    g.world_size = w;
    try {
      g.layout = rcts::describe(make_layout(w, par.tensor_model_parallel_size, par.expert_model_parallel_size,
                                            par.expert_tensor_parallel_size, par.pipeline_model_parallel_size));
    } catch (const std::exception& e) {
      g.error = e.what();
    }
    x.groups.push_back(std::move(g));
  }
  x.configs.push_back(explain_config(c, "baseline", false, base, backend, limits));
  for (const auto& v : c.variants) x.configs.push_back(explain_config(c, v.name, true, case_config(c, &v), backend, limits));
  for (const CheckKind* k : requested_kinds(c.expect)) x.checks.push_back({k, std::nullopt});
  for (const auto& v : c.variants)
    for (const CheckKind* k : requested_kinds(v.expect))
      if (!k->requested(c.expect)) x.checks.push_back({k, v.name});
  return x;
}

std::string explanation_text(const CaseExplanation& x) {
  const Case& c = *x.c;
  std::ostringstream os;
  os << "case " << c.id << "  (" << c.file.string() << ")\n  " << c.description << "\n";
  os << "  ranks: ";
  list_to(os, c.ranks, ", ");
  os << "   backends: ";
  list_to(os, c.backends, ", ");
  os << "\n";
  if (c.expect.config_error) {
    os << "  expects the config to be rejected with '" << *c.expect.config_error << "'\n";
    return os.str();
  }
  os << "  seeds (design §5) for tp_rank " << c.seed_ranks.tp << ", ep_rank " << c.seed_ranks.ep << ", etp_rank "
     << c.seed_ranks.etp << ": device-default=" << x.seed << " model-parallel-rng=" << x.model_parallel_seed
     << " expert-parallel-rng=" << x.expert_parallel_seed << "\n";
  for (const auto& g : x.groups) {
    os << "\n  process groups at " << g.world_size << " ranks (rank order tp-cp-ep-dp-pp, design §8):\n";
    os << (g.error ? "    " + *g.error + "\n" : g.layout);
  }
  for (const auto& cfg : x.configs) config_text(os, cfg);
  os << "\n  checks (case level; a variant may add its own):\n";
  for (const auto& k : x.checks)
    os << "    " << k.kind->name << (k.variant ? " (variant " + *k.variant + ")" : "") << ": " << k.kind->summary
       << "\n";
  return os.str();
}

json explanation_json(const CaseExplanation& x) {
  const Case& c = *x.c;
  json out = view_head("rcts-explain");
  out["id"] = c.id;
  out["file"] = c.file.string();
  out["description"] = c.description;
  out["ranks"] = c.ranks;
  out["backends"] = c.backends;
  if (c.expect.config_error) {
    out["expects_config_error"] = *c.expect.config_error;
    return out;
  }
  out["seeds"] = {{"tp_rank", c.seed_ranks.tp},
                  {"ep_rank", c.seed_ranks.ep},
                  {"etp_rank", c.seed_ranks.etp},
                  {"device-default", x.seed},
                  {"model-parallel-rng", x.model_parallel_seed},
                  {"expert-parallel-rng", x.expert_parallel_seed}};
  json groups = json::object();
  for (const auto& g : x.groups)
    groups[std::to_string(g.world_size)] = g.error ? json{{"error", *g.error}} : json{{"lines", lines_of(g.layout)}};
  out["process_groups"] = groups;
  out["configs"] = json::array();
  for (const auto& cfg : x.configs) out["configs"].push_back(config_json(cfg));
  json checks = json::array();
  for (const auto& k : x.checks)
    checks.push_back({{"kind", std::string(k.kind->name)},
                      {"summary", std::string(k.kind->summary)},
                      {"variant", k.variant ? json(*k.variant) : json(nullptr)}});
  out["checks"] = checks;
  return out;
}

}  // namespace rcts::harness
