#include "harness/checks/check_kinds.hpp"

#include <algorithm>
#include <limits>

#include "harness/checks/applicability.hpp"
#include "harness/checks/checks.hpp"
#include "harness/golden/golden.hpp"
#include "harness/checks/across_ranks.hpp"
#include "reference/core/error.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"

namespace rcts::harness {

namespace {

const std::string& label_of(const CheckContext& x) { return x.variant->name; }

// --- passes ----------------------------------------------------------------------

// A ratio compares a variant with the baseline: the baseline's own pass checks the rest.
void memory_baseline(const CheckContext& x, std::vector<CheckResult>& out) {
  MemoryExpect own = *x.c.expect.memory;
  own.max_ratio.reset();
  out.push_back(check_memory(own, x.base, x.base, "baseline"));
}

// The variant's expectation refines the case's: flags or'ed, limits replaced.
void memory_variant(const CheckContext& x, std::vector<CheckResult>& out) {
  MemoryExpect mem;
  if (x.c.expect.memory) mem = *x.c.expect.memory;
  if (const auto& vm = x.variant->expect.memory) {
    mem.analytic = mem.analytic || vm->analytic;
    if (vm->max_ratio) mem.max_ratio = vm->max_ratio;
    if (vm->budget_bytes) mem.budget_bytes = vm->budget_bytes;
  }
  out.push_back(check_memory(mem, x.base, *x.run, label_of(x)));
}

void counts_variant(const CheckContext& x, std::vector<CheckResult>& out) {
  auto counts = x.c.expect.counts;
  counts.insert(counts.end(), x.variant->expect.counts.begin(), x.variant->expect.counts.end());
  out.push_back(check_counts(counts, *x.run, label_of(x)));
}

void across_ranks(const RunRecord& r, const GroupLayout& layout, const CheckContext& x, const std::string& label,
                  std::vector<CheckResult>& out) {
  if (!x.multi) return;  // one rank has nothing to compare across
  out.push_back(check_masks_across_ranks(r, layout, *x.env.world, label));
  out.push_back(check_tp_replicas(r, layout, *x.env.world, label));
  out.push_back(check_dp_replicas(r, *x.env.world, label));
}

void offload_variant(const CheckContext& x, std::vector<CheckResult>& out) {
  Config plain = x.run->config;
  plain.offload.fine_grained_activation_offloading = plain.offload.cpu_offloading = false;
  out.push_back(check_offload(x.rerun(plain, "variant '" + label_of(x) + "' without offload"), *x.run, label_of(x)));
}

void golden_end(const CheckContext& x, std::vector<CheckResult>& out) {
  const std::string golden = golden_backend_of(x);
  if (x.env.collect_goldens) {  // regen-golden: keep the digests (collective like check_golden)
    (*x.env.collect_goldens)[x.c.id] = golden_of(x.c, x.base, golden, x.env.world);
    out.push_back({"golden", Outcome::pass, "digests collected for regen-golden"});
    return;
  }
  if (auto why = no_goldens_reason(x)) {
    out.push_back({"golden", Outcome::skip, *why});
    return;
  }
  out.push_back(check_golden(x.c, x.base, x.env.golden_dir, golden, x.env.world));
}

// The config must be rejected with exactly this rule code.
void config_error_judge(const CheckContext& x, std::vector<CheckResult>& out) {
  const std::string& code = *x.c.expect.config_error;
  std::vector<std::string> got;
  try {
    Config cfg = config_from_json(x.c.config, x.c.file.string(), "/config");
    for (const auto& issue : validate(cfg)) got.push_back(issue.code);
  } catch (const ConfigError& e) {
    got.push_back(e.code());
  }
  if (std::find(got.begin(), got.end(), code) != got.end()) {
    out.push_back({"config_error", Outcome::pass, "rejected with " + code});
    return;
  }
  std::string list;
  for (const auto& g : got) list += (list.empty() ? "" : ", ") + g;
  out.push_back({"config_error", Outcome::fail,
                 "expected rejection with '" + code + "', got " +
                     (got.empty() ? std::string("no error: the config is valid") : list)});
}

// Each kind's entry in the expect schema, by name; the two lists name the same kinds in
// the same order, or rcts refuses to start.
std::vector<CheckKind> bind_schema(std::vector<CheckKind> kinds) {
  const auto& schema = expect_kinds();
  RCTS_CHECK(schema.size() == kinds.size(), "the check registry and the expect schema list different kinds");
  for (size_t i = 0; i < kinds.size(); ++i) {
    RCTS_CHECK(kinds[i].name == schema[i].name, "check kind '" + std::string(kinds[i].name) +
                                                    "' has no expect schema entry at its place (cases/expect_schema.cpp)");
    kinds[i].schema = &schema[i];
  }
  return kinds;
}

// Designated fields, so an entry names each pass it has.
std::vector<CheckKind> registry() {
  std::vector<CheckKind> kinds = {
      {.name = "bitwise",
       .summary = "loss, outputs, input gradients, parameters, parameter gradients and side effects of every variant "
                  "equal the baseline's bit for bit",
       .on_variant =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             out.push_back(check_bitwise(x.base, *x.run, label_of(x)));
           }},
      {.name = "masks",
       .summary = "every dropout mask was drawn with its stream's design §5 seed, regenerates under the harness's own "
                  "Philox, streams are drawn contiguously from block 0, and recompute draws replay their forward draw",
       .on_baseline =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             out.push_back(check_masks(x.base, x.base, "baseline"));
           },
       .on_variant =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             out.push_back(check_masks(x.base, *x.run, label_of(x)));
           },
       .not_applicable = inapplicable::masks},
      {.name = "rng",
       .summary = "tracker seeds follow design §5 for the rank; every RNG state after every micro-batch equals the "
                  "baseline's",
       .on_baseline =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             out.push_back(check_rng(x.base, x.base, "baseline"));
           },
       .on_variant =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             out.push_back(check_rng(x.base, *x.run, label_of(x)));
           },
       .not_applicable = inapplicable::rng},
      {.name = "memory",
       .summary = "saved-activation bytes per layer equal the analytic model (Korthikanti et al. 2022), or stay within "
                  "a ratio of the baseline's or a budget",
       .on_baseline = memory_baseline,
       .on_variant = memory_variant,
       .not_applicable = inapplicable::memory},
      {.name = "counts",
       .summary = "forward invocations per module and micro-batch, original and recompute",
       .on_baseline =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             out.push_back(check_counts(x.c.expect.counts, x.base, "baseline"));
           },
       .on_variant = counts_variant,
       .not_applicable = inapplicable::counts},
      {.name = "masks_across_ranks",
       .summary = "multi-rank: masks identical or distinct across ranks as design §5 says, TP replicas hold identical "
                  "losses, outputs and replicated parameters and gradients, and data-parallel replicas hold the same "
                  "bits",
       .on_baseline =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             across_ranks(x.base, x.base_layout, x, "baseline", out);
           },
       .on_variant =
           [](const CheckContext& x, std::vector<CheckResult>& out) {
             across_ranks(*x.run, *x.layout, x, label_of(x), out);
           },
       .also_reports = {"tp_replicas", "dp_replicas"},
       .not_applicable = inapplicable::masks_across_ranks},
      {.name = "offload",
       .summary = "offload invariants: warmup moves nothing, every group moves its eligible bytes and reloads them, "
                  "margin, threshold in elements, host pool steady, device + host bytes equal the bytes held without "
                  "offload",
       .on_variant = offload_variant,
       .not_applicable = inapplicable::offload},
      {.name = "golden",
       .summary = "digests of the baseline equal golden/<backend>/<case>.json (<case>.np<W>.json for W ranks)",
       .on_case_end = golden_end,
       .not_applicable = inapplicable::golden},
      {.name = "config_error",
       .summary = "the config is rejected with the stated rule code (the case has no variants)",
       .runs_without_execution = true,
       .on_case_end = config_error_judge},
  };
  return kinds;
}

}  // namespace

const std::vector<CheckKind>& check_kinds() {
  static const std::vector<CheckKind> kinds = bind_schema(registry());
  return kinds;
}

const CheckKind* find_check_kind(std::string_view name) {
  for (const auto& k : check_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> check_kind_names() {
  std::vector<std::string> names;
  for (const auto& k : check_kinds()) names.emplace_back(k.name);
  return names;
}

std::vector<const CheckKind*> requested_kinds(const Expect& e) {
  std::vector<const CheckKind*> out;
  for (const auto& k : check_kinds())
    if (k.requested(e)) out.push_back(&k);
  return out;
}

}  // namespace rcts::harness
