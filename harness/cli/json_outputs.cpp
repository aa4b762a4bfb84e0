// JSON forms of list / explain / block (json_outputs.hpp). explain_json follows
// explain_case() (runner.cpp) item by item, so both say the same.
#include "harness/cli/json_outputs.hpp"

#include <cmath>
#include <map>
#include <sstream>

#include "harness/checks/check_kinds.hpp"
#include "harness/checks/checks.hpp"
#include "harness/cases/case_config.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/saved_bytes.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/parallel/groups.hpp"
#include "reference/recompute/plan.hpp"

namespace rcts::harness {

namespace {

using nlohmann::json;

json head(const char* schema) { return {{"schema", schema}, {"schema_version", kCommandJsonSchemaVersion}}; }

json kind_names(const Expect& e) {
  json out = json::array();
  for (const CheckKind* k : requested_kinds(e)) out.push_back(std::string(k->name));
  return out;
}

json plan_json(const std::vector<Segment>& plan) {
  json out = json::array();
  for (const auto& s : plan) out.push_back({{"begin", s.begin}, {"end", s.end}, {"checkpointed", s.checkpointed}});
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(' ') != std::string::npos) out.push_back(line.substr(line.find_first_not_of(' ')));
  return out;
}

json config_plan(const Case& c, const std::string& label, const Config& cfg, Backend& backend, const RunLimits& limits) {
  json j = {{"label", label}, {"config", config_to_json(cfg)}};
  j["plan"] = plan_json(recompute_plan(cfg));
  j["plan_text"] = plan_str(recompute_plan(cfg));
  const auto& r = cfg.recompute;
  j["recompute"] = {{"granularity", r.recompute_granularity ? json(*r.recompute_granularity) : json(nullptr)},
                    {"modules", r.recompute_granularity == "selective" ? json(r.recompute_modules) : json::array()}};
  if (cfg.offload.fine_grained_activation_offloading || cfg.offload.cpu_offloading) {
    Config dry = cfg;
    dry.run.steps = 1;
    dry.run.micro_batches = 2;
    check_run_limits(dry, "case " + c.id + " (" + label + ", dry run for the offload plan)", limits);
    const RunRecord rec = execute(dry, backend, c.seed_ranks);
    json groups = json::object();
    for (const auto& t : rec.offload->tensors)
      groups[t.group].push_back({{"tensor", t.tensor},
                                 {"numel", t.numel},
                                 {"offloaded", t.offloaded},
                                 {"kept_because", t.offloaded ? json(nullptr) : json(t.kept_because)}});
    j["offload"] = {{"threshold_elements", cfg.offload.min_offloaded_tensor_size},
                    {"margin_groups", rec.offload->margin_groups},
                    {"groups", groups}};
  } else {
    j["offload"] = nullptr;
  }
  if (cfg.model.num_moe_experts > 0) {
    j["expected_saved_bytes"] = {{"modelled", false}, {"why", "the analytic model covers dense layers only"}};
  } else {
    const auto st = stage_memory(cfg);
    j["expected_saved_bytes"] = {{"modelled", true},
                                 {"per_layer", st.per_layer_bytes()},
                                 {"total", st.stored_bytes},
                                 {"backward_peak", st.peak_backward_bytes}};
  }
  return j;
}

}  // namespace

json list_json(const std::vector<Case>& cases, const std::string& filter) {
  json out = head("rcts-list");
  out["cases"] = json::array();
  for (const auto& c : cases) {
    if (!filter.empty() && !glob_match(filter, c.id)) continue;
    json variants = json::array();
    for (const auto& v : c.variants) variants.push_back(v.name);
    out["cases"].push_back({{"id", c.id},
                            {"description", c.description},
                            {"file", c.file.string()},
                            {"ranks", c.ranks},
                            {"backends", c.backends},
                            {"checks", kind_names(c.expect)},
                            {"variants", variants},
                            {"xfail", c.xfail ? json(*c.xfail) : json(nullptr)}});
  }
  return out;
}

json explain_json(const Case& c, Backend& backend, const RunLimits& limits) {
  json out = head("rcts-explain");
  out["id"] = c.id;
  out["file"] = c.file.string();
  out["description"] = c.description;
  out["ranks"] = c.ranks;
  out["backends"] = c.backends;
  if (c.expect.config_error) {
    out["expects_config_error"] = *c.expect.config_error;
    return out;
  }
  const Config base = case_config(c, nullptr);
  out["seeds"] = {{"tp_rank", c.seed_ranks.tp},
                  {"ep_rank", c.seed_ranks.ep},
                  {"etp_rank", c.seed_ranks.etp},
                  {"device-default", base.run.seed},
                  {"model-parallel-rng", expected_stream_seed("model-parallel-rng", base.run.seed, c.seed_ranks)},
                  {"expert-parallel-rng", expected_stream_seed("expert-parallel-rng", base.run.seed, c.seed_ranks)}};
  json groups = json::object();
  const auto& par = base.parallel;
  for (int w : c.ranks) {
    if (w == 1) continue;
    try {
      groups[std::to_string(w)] = {{"lines", lines_of(rcts::describe(make_layout(
                                                 w, par.tensor_model_parallel_size, par.expert_model_parallel_size,
                                                 par.expert_tensor_parallel_size, par.pipeline_model_parallel_size)))}};
    } catch (const std::exception& e) {
      groups[std::to_string(w)] = {{"error", e.what()}};
    }
  }
  out["process_groups"] = groups;
  out["configs"] = json::array({config_plan(c, "baseline", base, backend, limits)});
  for (const auto& v : c.variants) out["configs"].push_back(config_plan(c, v.name, case_config(c, &v), backend, limits));
  json checks = json::array();
  for (const CheckKind* k : requested_kinds(c.expect))
    checks.push_back({{"kind", std::string(k->name)}, {"summary", std::string(k->summary)}, {"variant", nullptr}});
  for (const auto& v : c.variants)
    for (const CheckKind* k : requested_kinds(v.expect))
      if (!k->requested(c.expect))
        checks.push_back({{"kind", std::string(k->name)}, {"summary", std::string(k->summary)}, {"variant", v.name}});
  out["checks"] = checks;
  return out;
}

json block_json(const Config& cfg, const RunRecord& r, const Backend& backend, double seconds) {
  json out = head("rcts-block");
  out["backend"] = backend.name();
  out["config"] = config_to_json(cfg);
  out["plan"] = plan_json(r.plan);
  out["losses"] = r.losses;
  json norms = json::array();
  for (const auto& g : r.grads) {
    double s = 0;
    for (double x : to_vector<double>(g.tensor)) s += x * x;
    norms.push_back({{"name", g.name}, {"norm", std::sqrt(s)}});
  }
  out["gradient_norms"] = norms;
  out["saved_bytes_per_layer"] = r.saved_bytes_per_layer.at(0);
  std::map<std::string, int64_t> per;
  for (const SaveRecord* s : distinct_forward_saves(r.saves, "layers.0.")) per[s->key()] += s->bytes;
  out["layer0_saved_bytes"] = per;
  out["device_peak_bytes"] = r.device_peak;
  out["workspace_peak_bytes"] = r.workspace_peak;
  out["timing"] = {{"seconds", seconds}};
  return out;
}

}  // namespace rcts::harness
