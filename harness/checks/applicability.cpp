#include "harness/checks/applicability.hpp"

#include <filesystem>

#include "backends/registry.hpp"

namespace rcts::harness {

namespace {
bool lacks(const RunRecord& r, const char* field) { return r.not_recorded.count(field) > 0; }

// The record a pass judges (the variant's in a variant pass) and the words naming it.
const RunRecord& judged(const CheckContext& x) { return x.run ? *x.run : x.base; }
std::string who(const CheckContext& x) { return "the dump of " + judged(x).implementation; }

bool asks_budget(const CheckContext& x) {
  if (x.c.expect.memory && x.c.expect.memory->budget_bytes) return true;
  return x.variant && x.variant->expect.memory && x.variant->expect.memory->budget_bytes;
}
}  // namespace

std::optional<std::string> not_applicable(const CheckKind& k, const CheckContext& x) {
  return k.not_applicable ? k.not_applicable(x) : std::nullopt;
}

namespace inapplicable {

std::optional<std::string> golden(const CheckContext& x) {
  if (x.base.rcts_arithmetic) return std::nullopt;
  return "golden digests are of rcts's arithmetic; " + who(x) + " declares its own arithmetic";
}

std::optional<std::string> counts(const CheckContext& x) {
  if (!lacks(judged(x), "counts") && !lacks(x.base, "counts")) return std::nullopt;
  return who(x) + " records no module counts";
}

std::optional<std::string> memory(const CheckContext& x) {
  if (!asks_budget(x) || !lacks(judged(x), "memory.saved_peak")) return std::nullopt;
  return "the budget needs the saved-activation peak, which " + who(x) + " does not record";
}

std::optional<std::string> offload(const CheckContext& x) {
  const RunRecord& r = judged(x);
  if (r.offload || !r.offloaded_bytes.empty()) return std::nullopt;
  return who(x) + " records no offload (neither rcts's offload report nor offloaded_bytes)";
}

// A check with nothing to judge skips, saying why, rather than passing on no evidence.
std::optional<std::string> rng(const CheckContext& x) {
  const RunRecord& r = judged(x);
  if (r.seed_offset_rng) return std::nullopt;
  const RankCoords& s = x.c.seed_ranks;
  if (s.tp || s.ep || s.etp)
    return "the case seeds as tp " + std::to_string(s.tp) + ", ep " + std::to_string(s.ep) + ", etp " +
           std::to_string(s.etp) + " to judge design §5's seeds; " + who(x) +
           " records opaque generator states, which show no seeds";
  bool any = false;
  for (const RunRecord* q : {&r, &x.base})
    for (const auto& states : q->rng_after_opaque) any = any || !states.empty();
  if (!any) return who(x) + " records no generator state";
  return std::nullopt;
}

std::optional<std::string> masks(const CheckContext& x) {
  const RunRecord& r = judged(x);
  if (r.rcts_mask_rule || !r.masks.empty() || !x.base.masks.empty()) return std::nullopt;
  return who(x) + " records no dropout draw (dropout is off or not observed): no mask to judge";
}

std::optional<std::string> masks_across_ranks(const CheckContext& x) {
  const RunRecord& r = judged(x);
  if (r.seed_offset_rng) return std::nullopt;
  for (const auto& m : r.masks)
    if (m.kind == "expert") return "expert masks are compared by stream seed; " + who(x) + " has opaque generator states";
  return std::nullopt;
}

}  // namespace inapplicable

void run_check_pass(const CheckKind& k, CheckPass pass, const CheckContext& x, std::vector<CheckResult>& out) {
  if (auto why = not_applicable(k, x)) {
    out.push_back({std::string(k.name), Outcome::skip,
                   (x.variant ? x.variant->name : std::string("baseline")) + ": not applicable: " + *why});
    return;
  }
  pass(x, out);
}

std::string golden_backend_of(const CheckContext& x) {
  if (x.env.backend) return x.env.backend->golden_name();
  const BackendEntry* e = find_backend(x.base.backend);
  return e ? e->golden_name : x.base.backend;
}

std::optional<std::string> no_goldens_reason(const CheckContext& x) {
  if (const Backend* b = x.env.backend) {
    if (b->has_goldens()) return std::nullopt;
    return "backend '" + b->name() + "' keeps no golden files: its bits depend on the GPU model and library "
           "versions (its own checks compare it with itself)";
  }
  const std::string name = golden_backend_of(x);
  if (std::filesystem::is_directory(x.env.golden_dir / name)) return std::nullopt;
  return "no golden files for backend '" + x.base.backend + "' (" + (x.env.golden_dir / name).string() +
         " does not exist)";
}

}  // namespace rcts::harness
