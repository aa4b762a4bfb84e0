#include "reference/recompute/plan.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/core/faults.hpp"

namespace rcts {

std::vector<Segment> recompute_plan(const Config& c, int pp_rank) {
  const StageLayers stage = stage_layers(c, pp_rank);
  const int L = stage.count;
  std::vector<Segment> plan;
  const auto& r = c.recompute;
  const bool full = c.run.training && r.recompute_granularity == "full";
  if (!full) {
    for (int i = 0; i < L; ++i) plan.push_back({i, i + 1, false});
    return plan;
  }
  RCTS_CHECK(r.recompute_num_layers && *r.recompute_num_layers >= 1,
             "full recompute needs recompute_num_layers >= 1 (validate the config first)");
  const int n = *r.recompute_num_layers;
  if (r.recompute_method == "uniform") {
    for (int b = 0; b < L; b += n) plan.push_back({b, std::min(b + n, L), true});
    // Mutant: a truncated tail chunk is left un-checkpointed.
    if (fault_on(Fault::uniform_drops_tail) && L % n != 0) plan.back().checkpointed = false;
  } else if (r.recompute_method == "block") {
    for (int i = 0; i < L; ++i) plan.push_back({i, i + 1, i < n});
  } else {
    throw Error("full recompute needs recompute_method 'uniform' or 'block', got '" +
                r.recompute_method.value_or("<unset>") + "'");
  }
  return plan;
}

std::string plan_str(const std::vector<Segment>& plan) {
  std::string s;
  for (const auto& g : plan) {
    if (!s.empty()) s += ' ';
    s += '[';
    s += std::to_string(g.begin);
    s += ',';
    s += std::to_string(g.end);
    s += g.checkpointed ? ")*" : ")";
  }
  return s;
}

}  // namespace rcts
