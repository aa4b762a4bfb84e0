#include "reference/memory_model/advise.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <tuple>

#include "reference/config/config_error.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/pipeline_stage.hpp"
#include "reference/config/validate.hpp"
#include "reference/core/error.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/memory_model/checkpoint_math.hpp"

namespace rcts {
namespace {

[[noreturn]] void refuse(const std::string& where, const std::string& field, const std::string& value,
                         const std::string& why) {
  throw ConfigError("advise.not_modelled", field_to_json_path(field),
                    "advise: " + where + ": " + field + " = " + value + ": " + why);
}

// The selective boundaries the model has: the dense layer's, plus MLA's up-projection
// region or GDN's gated output norm (design §14, §15).
std::vector<std::string> boundaries_of(const ModelConfig& m) {
  std::vector<std::string> b = {"core_attn", "mlp", "layernorm"};
  if (m.multi_latent_attention) b.push_back("mla_up_proj");
  if (m.gated_delta_net) b.push_back("gdn_norm_out");
  return b;
}

std::vector<AdviceCandidate> candidate_settings(int L, const std::vector<std::string>& boundaries) {
  std::vector<AdviceCandidate> out;
  auto selective = [&](std::vector<std::string> mods) {
    AdviceCandidate c;
    std::string list;
    for (const auto& m : mods) list += (list.empty() ? "" : ",") + m;
    c.name = "selective [" + list + "]";
    c.width = static_cast<int>(mods.size());
    c.recompute.recompute_granularity = "selective";
    c.recompute.recompute_modules = std::move(mods);
    out.push_back(std::move(c));
  };
  const unsigned n = static_cast<unsigned>(boundaries.size());
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    std::vector<std::string> mods;
    for (unsigned i = 0; i < n; ++i)
      if (mask & (1u << i)) mods.push_back(boundaries[i]);
    selective(std::move(mods));
  }
  for (const char* method : {"uniform", "block"})
    for (int n = 1; n <= L; ++n) {
      AdviceCandidate c;
      c.name = std::string("full ") + method + " " + std::to_string(n);
      c.width = static_cast<int>(boundaries.size()) + 1;  // wider than every selective set
      c.recompute.recompute_granularity = "full";
      c.recompute.recompute_method = method;
      c.recompute.recompute_num_layers = n;
      c.recompute.recompute_modules = {};
      out.push_back(std::move(c));
    }
  return out;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30));
  return buf;
}

}  // namespace

Advice advise(const Config& base, int64_t budget_bytes, const std::string& where) {
  RCTS_CHECK(budget_bytes > 0, "advise: " + where + ": the budget must be a positive number of bytes (got " +
                                   std::to_string(budget_bytes) + ")");
  validate_or_throw(base, "advise: " + where);
  const auto& m = base.model;
  if (m.num_moe_experts > 0)
    refuse(where, "model.num_moe_experts", std::to_string(m.num_moe_experts), "the memory model covers dense layers only");
  if (m.multi_latent_attention && m.gated_delta_net)
    refuse(where, "model.gated_delta_net", "true", "MLA with GDN layers is not modelled");
  if (m.multi_latent_attention && base.parallel.sequence_parallel)
    refuse(where, "parallel.sequence_parallel", "true", "MLA with sequence parallelism is not modelled");
  if (base.offload.fine_grained_activation_offloading)
    refuse(where, "offload.fine_grained_activation_offloading", "true", "the memory model has no offload timeline");
  if (base.offload.cpu_offloading) refuse(where, "offload.cpu_offloading", "true", "the memory model has no offload timeline");
  if (!base.run.training) refuse(where, "run.training", "false", "eval saves nothing for backward: nothing to advise");

  Advice a;
  a.base = base;
  a.budget_bytes = budget_bytes;
  const int64_t t = base.parallel.tensor_model_parallel_size;
  for (AdviceCandidate& c : candidate_settings(layers_per_stage(base), boundaries_of(base.model))) {  // N = 1 .. layers of a stage
    Config cfg = base;
    cfg.recompute = c.recompute;
    cfg.recompute.distribute_saved_activations = false;
    cfg.recompute.moe_layer_recompute = false;
    if (auto issues = validate(cfg); !issues.empty()) {
      c.valid = false;
      c.invalid_code = issues.front().code;
    } else {
      const StageMemory st = stage_memory(cfg);
      const RecomputeOverhead o = recompute_overhead(cfg);
      a.in_flight = st.in_flight;
      c.stored_bytes = st.stored_bytes;
      c.peak_backward_bytes = st.peak_backward_bytes;
      c.peak_bytes = st.peak_in_flight_bytes;
      // Every term shards over TP but MLA's replicated down-projections.
      c.recompute_flops = (o.recompute_flops - o.replicated_recompute_flops) / t + o.replicated_recompute_flops;
      c.step_ratio = o.step_ratio;
      c.fits = c.peak_bytes <= budget_bytes;
    }
    a.candidates.push_back(std::move(c));
  }
  std::stable_sort(a.candidates.begin(), a.candidates.end(), [](const AdviceCandidate& x, const AdviceCandidate& y) {
    // Invalid candidates last; they have no figures.
    return std::make_tuple(!x.valid, x.recompute_flops, x.width, x.peak_bytes, x.name) <
           std::make_tuple(!y.valid, y.recompute_flops, y.width, y.peak_bytes, y.name);
  });
  for (size_t i = 0; i < a.candidates.size(); ++i)
    if (a.candidates[i].valid && a.candidates[i].fits) {
      a.recommended = i;
      break;
    }
  return a;
}

nlohmann::json advice_json(const Advice& a) {
  nlohmann::json j;
  j["config"] = config_to_json(a.base);
  j["config"].erase("recompute");
  j["budget_bytes"] = a.budget_bytes;
  j["micro_batches_in_flight"] = a.in_flight;
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : a.candidates) {
    nlohmann::json e = {{"name", c.name}, {"valid", c.valid}, {"fits", c.fits}};
    Config shown;
    shown.recompute = c.recompute;
    e["recompute"] = config_to_json(shown)["recompute"];
    if (!c.valid) {
      e["invalid_code"] = c.invalid_code;
    } else {
      e["peak_bytes"] = c.peak_bytes;
      e["stored_bytes"] = c.stored_bytes;
      e["peak_backward_bytes"] = c.peak_backward_bytes;
      e["recompute_flops"] = c.recompute_flops;
      e["step_ratio"] = c.step_ratio;
    }
    j["candidates"].push_back(std::move(e));
  }
  j["recommended"] = a.recommended ? nlohmann::json(a.candidates[*a.recommended].name) : nlohmann::json(nullptr);
  return j;
}

std::string advice_text(const Advice& a) {
  std::ostringstream os;
  os << "budget " << a.budget_bytes << " bytes (" << gib(a.budget_bytes) << " GiB) of activations per rank, "
     << a.in_flight << " micro-batch(es) in flight\n";
  // The setting column is as wide as the longest name (MLA/GDN subsets are long).
  int w = 34;
  for (const auto& c : a.candidates) w = std::max(w, static_cast<int>(c.name.size()));
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %16s %10s %16s %16s %8s  %s\n", w, "setting", "peak bytes", "GiB",
                "stored bytes", "extra fwd FLOPs", "step", "fits");
  os << line;
  for (size_t i = 0; i < a.candidates.size(); ++i) {
    const auto& c = a.candidates[i];
    if (!c.valid) {
      std::snprintf(line, sizeof line, "%-*s invalid for this config [%s]\n", w, c.name.c_str(), c.invalid_code.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-*s %16lld %10s %16lld %16lld %8.4f  %s%s\n", w, c.name.c_str(),
                    static_cast<long long>(c.peak_bytes), gib(c.peak_bytes).c_str(),
                    static_cast<long long>(c.stored_bytes), static_cast<long long>(c.recompute_flops), c.step_ratio,
                    c.fits ? "yes" : "no", a.recommended == i ? "  <- cheapest that fits" : "");
    }
    os << line;
  }
  if (a.recommended) {
    os << "recommended: " << a.candidates[*a.recommended].name << "\n";
  } else {
    const AdviceCandidate* best = nullptr;
    for (const auto& c : a.candidates)
      if (c.valid && (!best || c.peak_bytes < best->peak_bytes)) best = &c;
    os << "nothing fits: the smallest peak is " << (best ? std::to_string(best->peak_bytes) + " bytes (" + best->name + ")"
                                                         : std::string("-"))
       << ", over the budget of " << a.budget_bytes << " bytes\n";
  }
  return os.str();
}

}  // namespace rcts
