#include "harness/cases/expect_schema.hpp"

#include <limits>

namespace rcts::harness {

namespace {

constexpr int64_t kMaxCount = std::numeric_limits<int32_t>::max();

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

}  // namespace

const std::vector<ExpectKind>& expect_kinds() {
  static const std::vector<ExpectKind> kinds = {
      {"bitwise", false, [](const JsonReader& v, Expect& e) { e.bitwise = v.boolean(); },
       [](const Expect& e) { return e.bitwise; }},
      {"masks", false, [](const JsonReader& v, Expect& e) { e.masks = v.boolean(); },
       [](const Expect& e) { return e.masks; }},
      {"rng", false, [](const JsonReader& v, Expect& e) { e.rng = v.boolean(); }, [](const Expect& e) { return e.rng; }},
      {"memory", false, parse_memory, [](const Expect& e) { return e.memory.has_value(); }},
      {"counts", false, parse_counts, [](const Expect& e) { return !e.counts.empty(); }},
      {"masks_across_ranks", false, [](const JsonReader& v, Expect& e) { e.masks_across_ranks = v.boolean(); },
       [](const Expect& e) { return e.masks_across_ranks; }},
      {"offload", false, [](const JsonReader& v, Expect& e) { e.offload = v.boolean(); },
       [](const Expect& e) { return e.offload; }},
      {"golden", true, [](const JsonReader& v, Expect& e) { e.golden = v.boolean(); },
       [](const Expect& e) { return e.golden; }},
      {"config_error", true, [](const JsonReader& v, Expect& e) { e.config_error = v.str(); },
       [](const Expect& e) { return e.config_error.has_value(); }},
  };
  return kinds;
}

const ExpectKind* find_expect_kind(std::string_view name) {
  for (const auto& k : expect_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> expect_kind_names() {
  std::vector<std::string> names;
  for (const auto& k : expect_kinds()) names.emplace_back(k.name);
  return names;
}

Expect parse_expectations(const JsonReader& r, bool variant) {
  r.expect_object(expect_kind_names());
  Expect e;
  for (const auto& k : expect_kinds()) {
    const std::string key(k.name);
    if (!r.has(key.c_str())) continue;
    if (variant && k.case_level_only)
      r.at(key.c_str()).fail(key + " belongs to the case's expect, not to a variant's (it is judged once per case)");
    k.parse(r.at(key.c_str()), e);
  }
  return e;
}

}  // namespace rcts::harness
