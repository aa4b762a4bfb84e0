#include "harness/lib/check_kinds.hpp"

#include <algorithm>
#include <limits>

#include "harness/lib/applicability.hpp"
#include "harness/lib/checks.hpp"
#include "harness/lib/golden.hpp"
#include "harness/lib/ranks.hpp"
#include "harness/lib/runner.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"

namespace rcts::harness {

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();

const std::string& label_of(const CheckContext& x) { return x.variant->name; }

// --- parsers ---------------------------------------------------------------------

void parse_memory(const JsonReader& m, Expect& e) {
  m.expect_object({"analytic", "max_ratio", "budget_bytes"});
  MemoryExpect me;
  if (m.has("analytic")) me.analytic = m.at("analytic").boolean();
  if (m.has("max_ratio")) me.max_ratio = m.at("max_ratio").number(0.0, 1e9);
  if (m.has("budget_bytes")) me.budget_bytes = m.at("budget_bytes").integer(0, std::numeric_limits<int64_t>::max());
  e.memory = me;
}

void parse_counts(const JsonReader& c, Expect& e) {
  if (!c.json().is_object()) c.fail("expected an object mapping module patterns to {original, recompute}");
  for (const auto& [pattern, v] : c.json().items()) {
    JsonReader one(c.file(), v, c.path() + "/" + pattern);
    one.expect_object({"original", "recompute"});
    if (!one.has("original") || !one.has("recompute")) one.fail("needs both 'original' and 'recompute'");
    e.counts.push_back({pattern, one.at("original").integer(0, kMaxCount), one.at("recompute").integer(0, kMaxCount)});
  }
}

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
  out.push_back(check_masks_across_ranks(r, layout, *x.options.world, label));
  out.push_back(check_tp_replicas(r, layout, *x.options.world, label));
}

void offload_variant(const CheckContext& x, std::vector<CheckResult>& out) {
  Config plain = x.run->config;
  plain.offload.fine_grained_activation_offloading = plain.offload.cpu_offloading = false;
  out.push_back(check_offload(x.rerun(plain, "variant '" + label_of(x) + "' without offload"), *x.run, label_of(x)));
}

void golden_end(const CheckContext& x, std::vector<CheckResult>& out) {
  const std::string golden = golden_backend_of(x);
  if (x.options.collect_goldens) {  // regen-golden: keep the digests (collective like check_golden)
    (*x.options.collect_goldens)[x.c.id] = golden_of(x.c, x.base, golden, x.options.world);
    out.push_back({"golden", Outcome::pass, "digests collected for regen-golden"});
    return;
  }
  if (auto why = no_goldens_reason(x)) {
    out.push_back({"golden", Outcome::skip, *why});
    return;
  }
  out.push_back(check_golden(x.c, x.base, x.options.golden_dir, golden, x.options.world));
}

// The config must be rejected with exactly this rule code.
void config_error_judge(const CheckContext& x, std::vector<CheckResult>& out) {
  const std::string& code = *x.c.expect.config_error;
  std::vector<std::string> got;
  try {
    Config cfg = config_from_json(x.c.config, x.c.file.string());
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

}  // namespace

const std::vector<CheckKind>& check_kinds() {
  static const std::vector<CheckKind> kinds = {
      {"bitwise",
       "loss, outputs, input gradients, parameters, parameter gradients and side effects of every variant equal the "
       "baseline's bit for bit",
       false, false, [](const JsonReader& v, Expect& e) { e.bitwise = v.boolean(); },
       [](const Expect& e) { return e.bitwise; }, nullptr,
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         out.push_back(check_bitwise(x.base, *x.run, label_of(x)));
       }},
      {"masks",
       "every dropout mask was drawn with its stream's design §5 seed, regenerates under the harness's own Philox, "
       "streams are drawn contiguously from block 0, and recompute draws replay their forward draw",
       false, false, [](const JsonReader& v, Expect& e) { e.masks = v.boolean(); },
       [](const Expect& e) { return e.masks; },
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         out.push_back(check_masks(x.base, x.base, "baseline"));
       },
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         out.push_back(check_masks(x.base, *x.run, label_of(x)));
       }},
      {"rng", "tracker seeds follow design §5 for the rank; every RNG state after every micro-batch equals the baseline's",
       false, false, [](const JsonReader& v, Expect& e) { e.rng = v.boolean(); },
       [](const Expect& e) { return e.rng; },
       [](const CheckContext& x, std::vector<CheckResult>& out) { out.push_back(check_rng(x.base, x.base, "baseline")); },
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         out.push_back(check_rng(x.base, *x.run, label_of(x)));
       }},
      {"memory",
       "saved-activation bytes per layer equal the analytic model (Korthikanti et al. 2022), or stay within a ratio "
       "of the baseline's or a budget",
       false, false, parse_memory, [](const Expect& e) { return e.memory.has_value(); }, memory_baseline,
       memory_variant},
      {"counts", "forward invocations per module and micro-batch, original and recompute", false, false, parse_counts,
       [](const Expect& e) { return !e.counts.empty(); },
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         out.push_back(check_counts(x.c.expect.counts, x.base, "baseline"));
       },
       counts_variant},
      {"masks_across_ranks",
       "multi-rank: masks identical or distinct across ranks as design §5 says, and TP replicas hold identical "
       "losses, outputs and replicated parameters and gradients",
       false, false, [](const JsonReader& v, Expect& e) { e.masks_across_ranks = v.boolean(); },
       [](const Expect& e) { return e.masks_across_ranks; },
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         across_ranks(x.base, x.base_layout, x, "baseline", out);
       },
       [](const CheckContext& x, std::vector<CheckResult>& out) {
         across_ranks(*x.run, *x.layout, x, label_of(x), out);
       },
       nullptr, {"tp_replicas"}},
      {"offload",
       "offload invariants: warmup moves nothing, every group moves its eligible bytes and reloads them, margin, "
       "threshold in elements, host pool steady, device + host bytes equal the bytes held without offload",
       false, false, [](const JsonReader& v, Expect& e) { e.offload = v.boolean(); },
       [](const Expect& e) { return e.offload; }, nullptr, offload_variant},
      {"golden", "digests of the baseline equal golden/<backend>/<case>.json (<case>.np<W>.json for W ranks)", true,
       false, [](const JsonReader& v, Expect& e) { e.golden = v.boolean(); },
       [](const Expect& e) { return e.golden; }, nullptr, nullptr, golden_end},
      {"config_error", "the config is rejected with the stated rule code (the case has no variants)", true, true,
       [](const JsonReader& v, Expect& e) { e.config_error = v.str(); },
       [](const Expect& e) { return e.config_error.has_value(); }, nullptr, nullptr, config_error_judge},
  };
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

Expect parse_expectations(const JsonReader& r, bool variant) {
  r.expect_object(check_kind_names());
  Expect e;
  for (const auto& k : check_kinds()) {
    const std::string key(k.name);
    if (!r.has(key.c_str())) continue;
    if (variant && k.case_level_only)
      r.at(key.c_str()).fail(key + " belongs to the case's expect, not to a variant's (it is judged once per case)");
    k.parse(r.at(key.c_str()), e);
  }
  return e;
}

std::vector<const CheckKind*> requested_kinds(const Expect& e) {
  std::vector<const CheckKind*> out;
  for (const auto& k : check_kinds())
    if (k.requested(e)) out.push_back(&k);
  return out;
}

}  // namespace rcts::harness
