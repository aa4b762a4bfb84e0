// What `rcts explain` says of a case (its configs, chunks, recomputed modules, offload
// groups, expected bytes, seeds, process groups and checks), as one value rendered as
// text or as JSON (`--json`, docs/json-report.md): what needs a dry run or the memory
// model is computed once, so both forms say the same.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cases/case.hpp"
#include "harness/checks/check_kinds.hpp"
#include "reference/backend/backend.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/memory_model/run_estimate.hpp"
#include "reference/offload/offload_manager.hpp"

namespace rcts::harness {

// One config of the case: the baseline or a variant.
struct ConfigExplanation {
  std::string label;         // "baseline" or the variant's name
  bool variant = false;
  Config config;
  std::vector<Segment> plan;
  // Offloading configs: what a dry run (warmup + one offloading micro-batch) moves.
  struct Offload {
    std::vector<std::string> margin_groups;
    std::vector<OffloadedTensor> tensors;  // in the order the manager saw them
  };
  std::optional<Offload> offload;
  std::optional<StageMemory> expected;  // the analytic model; none for MoE layers (dense only)
};

struct CaseExplanation {
  const Case* c = nullptr;
  // Config-error cases say only which rule rejects them; the rest is left empty.
  uint64_t seed = 0;  // the baseline's run seed; the stream seeds follow from it (design §5)
  uint64_t model_parallel_seed = 0, expert_parallel_seed = 0;
  struct Groups {
    int world_size = 0;
    std::string layout;  // rcts::describe of the process groups
    std::optional<std::string> error;  // why the layout cannot be built at this size
  };
  std::vector<Groups> groups;  // per world size > 1 the case lists
  std::vector<ConfigExplanation> configs;  // baseline first, then each variant
  struct Check {
    const CheckKind* kind;
    std::optional<std::string> variant;  // a kind only this variant asks for
  };
  std::vector<Check> checks;
};

// Runs the dry runs the offloading configs need, each checked against `limits` first.
CaseExplanation explain(const Case& c, Backend& backend, const RunLimits& limits = {});

std::string explanation_text(const CaseExplanation& x);
// {"schema": "rcts-explain", id, file, description, ranks, backends, seeds, process
// groups, configs with plans, offload groups and expected bytes, checks}.
nlohmann::json explanation_json(const CaseExplanation& x);

}  // namespace rcts::harness
