#include "harness/checks/applicability.hpp"

#include <filesystem>

#include "backends/registry.hpp"

namespace rcts::harness {

namespace {
bool lacks(const RunRecord& r, const char* field) { return r.not_recorded.count(field) > 0; }

bool asks_budget(const CheckContext& x) {
  if (x.c.expect.memory && x.c.expect.memory->budget_bytes) return true;
  return x.variant && x.variant->expect.memory && x.variant->expect.memory->budget_bytes;
}
}  // namespace

std::optional<std::string> not_applicable(const CheckKind& k, const CheckContext& x) {
  const RunRecord& r = x.run ? *x.run : x.base;
  const std::string kind(k.name);
  const std::string who = "the dump of " + r.implementation;
  if (kind == "golden" && !x.base.rcts_arithmetic)
    return "golden digests are of rcts's arithmetic; " + who + " declares its own arithmetic";
  if (kind == "counts" && (lacks(r, "counts") || lacks(x.base, "counts")))
    return who + " records no module counts";
  if (kind == "memory" && asks_budget(x) && lacks(r, "memory.saved_peak"))
    return "the budget needs the saved-activation peak, which " + who + " does not record";
  if (kind == "offload") {
    if (!r.offload && r.offloaded_bytes.empty())
      return who + " records no offload (neither rcts's offload report nor offloaded_bytes)";
  }
  // A check with nothing to judge skips, saying why, rather than passing on no evidence.
  if (kind == "rng" && !r.seed_offset_rng) {
    const RankCoords& s = x.c.seed_ranks;
    if (s.tp || s.ep || s.etp)
      return "the case seeds as tp " + std::to_string(s.tp) + ", ep " + std::to_string(s.ep) + ", etp " +
             std::to_string(s.etp) + " to judge design §5's seeds; " + who +
             " records opaque generator states, which show no seeds";
    bool any = false;
    for (const RunRecord* q : {&r, &x.base})
      for (const auto& states : q->rng_after_opaque) any = any || !states.empty();
    if (!any) return who + " records no generator state";
  }
  if (kind == "masks" && !r.rcts_mask_rule && r.masks.empty() && x.base.masks.empty())
    return who + " records no dropout draw (dropout is off or not observed): no mask to judge";
  if (kind == "masks_across_ranks" && !r.seed_offset_rng)
    for (const auto& m : r.masks)
      if (m.kind == "expert") return "expert masks are compared by stream seed; " + who + " has opaque generator states";
  return std::nullopt;
}

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
