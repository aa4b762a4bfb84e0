// The feature gate: which configs the reference model can run today. validate()
// says whether a config is meaningful; this says whether it is implemented yet.
#include <algorithm>

#include "reference/config/refusals.hpp"
#include "reference/config/validate.hpp"

namespace rcts {
namespace {

std::string describe(const std::vector<ConfigIssue>& issues) {
  std::string s;
  for (const auto& i : issues) s += "\n  [" + i.code + "] " + i.message;
  return s;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Supported Supported::everything() {
  Supported s;
  s.swiglu = s.moe = s.mla = s.gdn = s.tensor_parallel = s.pipeline_parallel = true;
  s.fine_grained_offload = s.cpu_offloading = s.flash_attention = s.expert_offload = true;
  return s;
}

std::vector<ConfigIssue> check_supported(const Config& c, const Supported& s) {
  std::vector<ConfigIssue> out;
  auto gap = [&](bool used, bool have, const std::string& what, std::vector<std::string> fields) {
    if (used && !have)
      out.push_back({kFeatureNotImplemented, what + ": the reference model does not implement this yet",
                     std::move(fields)});
  };
  const auto& m = c.model;
  const auto& p = c.parallel;
  gap(m.activation == "swiglu", s.swiglu, "model.activation = swiglu", {"model.activation"});
  gap(m.num_moe_experts > 0, s.moe, "model.num_moe_experts = " + std::to_string(m.num_moe_experts) + " (MoE)",
      {"model.num_moe_experts"});
  gap(m.multi_latent_attention, s.mla, "model.multi_latent_attention = true (MLA)", {"model.multi_latent_attention"});
  gap(m.gated_delta_net, s.gdn, "model.gated_delta_net = true (GDN)", {"model.gated_delta_net"});
  gap(m.flash_attention, s.flash_attention,
      "model.flash_attention = true (a fused attention: the cuda-cudnn backend has one)", {"model.flash_attention"});
  gap(p.tensor_model_parallel_size > 1, s.tensor_parallel,
      "parallel.tensor_model_parallel_size = " + std::to_string(p.tensor_model_parallel_size),
      {"parallel.tensor_model_parallel_size"});
  gap(p.pipeline_model_parallel_size > 1, s.pipeline_parallel,
      "parallel.pipeline_model_parallel_size = " + std::to_string(p.pipeline_model_parallel_size),
      {"parallel.pipeline_model_parallel_size"});
  gap(c.offload.fine_grained_activation_offloading, s.fine_grained_offload,
      "offload.fine_grained_activation_offloading = true", {"offload.fine_grained_activation_offloading"});
  gap(c.offload.cpu_offloading, s.cpu_offloading, "offload.cpu_offloading = true", {"offload.cpu_offloading"});
  if (c.offload.fine_grained_activation_offloading)
    for (const char* name : {"expert_fc1", "moe_act"})
      gap(contains(c.offload.offload_modules, name), s.expert_offload, std::string("offload module '") + name + "'",
          {"offload.offload_modules"});
  // Selective names the schema accepts but whose module the model lacks.
  const std::vector<std::pair<std::string, bool>> module_feature = {
      {"moe", s.moe}, {"moe_act", s.moe}, {"shared_experts", s.moe}, {"mla_up_proj", s.mla},
      {"gdn_norm_out", s.gdn}};
  const RecomputeConfig r = effective_recompute(c.recompute);
  const auto sel = r.recompute_granularity == "selective" ? r.recompute_modules : std::vector<std::string>{};
  for (const auto& [name, have] : module_feature)
    gap(contains(sel, name), have, "recompute module '" + name + "'", {"recompute.recompute_modules"});
  // The combinations the reference does not model, each with its reason (refusals.hpp).
  for (const Refusal& x : refusals())
    if (x.uses(c))
      out.push_back({kFeatureNotImplemented,
                     x.what(c) + ": the reference model does not implement this yet (" + x.why + ")", x.fields});
  return out;
}

void check_supported_or_throw(const Config& cfg, const Supported& s, const std::string& where) {
  auto issues = check_supported(cfg, s);
  if (issues.empty()) return;
  std::string path = field_to_json_path(issues.front().fields.front());
  std::string msg = where + ": unsupported config (" + std::to_string(issues.size()) + " issue" +
                    (issues.size() == 1 ? "" : "s") + "):" + describe(issues);
  throw ConfigError(kFeatureNotImplemented, std::move(path), msg, std::move(issues));
}

}  // namespace rcts
