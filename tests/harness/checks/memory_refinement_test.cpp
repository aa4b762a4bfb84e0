// A variant's own memory expectation refines the case's (check_kinds.cpp): flags are
// or'ed and limits replaced, so a variant giving a ratio or a budget keeps the case's
// analytic comparison and its other limit. Each row is judged by the memory kind's
// variant pass, with the exact verdict.
#include <gtest/gtest.h>

#include "harness/checks/check_kinds.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts::harness {
namespace {

const RunRecord& run_of_small_config() {
  static const RunRecord r = test_support::run_cpu(test_support::dense({.ffn = 32}));
  return r;
}

MemoryExpect analytic() {
  MemoryExpect m;
  m.analytic = true;
  return m;
}
MemoryExpect ratio(double r) {
  MemoryExpect m;
  m.max_ratio = r;
  return m;
}
MemoryExpect budget(int64_t b) {
  MemoryExpect m;
  m.budget_bytes = b;
  return m;
}

CheckResult variant_verdict(const std::optional<MemoryExpect>& of_case, const std::optional<MemoryExpect>& of_variant,
                            const RunRecord& base, const RunRecord& run) {
  Case c;
  c.expect.memory = of_case;
  Variant v;
  v.name = "v";
  v.expect.memory = of_variant;
  const CheckEnv env;
  const GroupLayout layout;
  const CheckContext x{c, env, false, base, layout, &v, &run, &layout, {}};
  std::vector<CheckResult> out;
  find_check_kind("memory")->on_variant(x, out);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

TEST(MemoryRefinement, AVariantsRatioOrBudgetAddsToTheCasesAnalyticComparison) {
  const RunRecord& clean = run_of_small_config();
  const auto want = stage_memory(clean.config).per_layer_bytes();
  ASSERT_EQ(clean.saved_bytes_per_layer.at(0), std::vector<int64_t>(want.begin(), want.end()));
  const int64_t peak = clean.saved_peak;
  int64_t total = 0;
  for (auto b : clean.saved_bytes_per_layer.at(0)) total += b;
  // The variant's record saves 2 bytes more in layer 0 than the analytic model says.
  RunRecord off = clean;
  for (auto& mb : off.saved_bytes_per_layer) mb.at(0) += 2;
  const std::string layer0 = "v: layer 0 saved " + std::to_string(want[0] + 2) + " bytes, the analytic model says " +
                             std::to_string(want[0]);
  const std::string model = "v: per-layer bytes equal the analytic model, backward peak " +
                            std::to_string(stage_memory(clean.config).peak_backward_bytes) + " bytes as the model";
  const std::string saved = " (" + std::to_string(total) + " bytes saved per micro-batch)";
  struct Row {
    std::string label;
    std::optional<MemoryExpect> of_case, of_variant;
    const RunRecord* run;
    Outcome outcome;
    std::string detail;
  };
  const std::vector<Row> rows = {
      {"case analytic, variant none", analytic(), std::nullopt, &off, Outcome::fail, layer0},
      {"case analytic, variant ratio", analytic(), ratio(100), &off, Outcome::fail, layer0},
      {"case analytic, variant budget", analytic(), budget(int64_t{1} << 40), &off, Outcome::fail, layer0},
      {"case analytic, variant ratio, clean", analytic(), ratio(100), &clean, Outcome::pass,
       model + "; ratio 1.000000" + saved},
      {"case budget, variant ratio: the budget stays", budget(peak - 1), ratio(100), &clean, Outcome::fail,
       "v: saved-activation peak " + std::to_string(peak) + " bytes exceeds the budget " + std::to_string(peak - 1)},
      {"case ratio, variant analytic: the ratio stays", ratio(0.5), analytic(), &clean, Outcome::fail,
       "v: saved " + std::to_string(total) + " bytes = 1.000000 x baseline (" + std::to_string(total) +
           "), budget ratio 0.500000"},
      {"case ratio, variant ratio: the variant's limit replaces it", ratio(0.5), ratio(2), &clean, Outcome::pass,
       "v: ratio 1.000000" + saved},
      {"case budget, variant budget: the variant's limit replaces it", budget(peak - 1), budget(peak), &clean,
       Outcome::pass, "v: within budget" + saved},
  };
  for (const auto& row : rows) {
    const CheckResult r = variant_verdict(row.of_case, row.of_variant, clean, *row.run);
    EXPECT_EQ(r.outcome, row.outcome) << row.label << ": " << r.detail;
    EXPECT_EQ(r.detail, row.detail) << row.label;
  }
}

}  // namespace
}  // namespace rcts::harness

namespace rcts::harness {
namespace {

// The same rule for counts: a variant's count expectations are added to the case's.
TEST(CountsRefinement, AVariantsCountsAddToTheCases) {
  const RunRecord& run = run_of_small_config();
  const std::string mod = "layers.0.attention.core";
  ASSERT_EQ(run.counts.count(mod), 1u);
  const auto& got = run.counts.at(mod);
  ASSERT_EQ(run.micro_batches_total(), 1);
  Case c;
  c.expect.counts = {{mod, got.original + 4, got.recompute}};  // the case's expectation is wrong
  Variant v;
  v.name = "v";
  v.expect.counts = {{mod, got.original, got.recompute}};  // the variant's is right
  const CheckEnv env;
  const GroupLayout layout;
  const CheckContext x{c, env, false, run, layout, &v, &run, &layout, {}};
  std::vector<CheckResult> out;
  find_check_kind("counts")->on_variant(x, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].outcome, Outcome::fail);
  EXPECT_EQ(out[0].detail, "v: " + mod + " ran forward " + std::to_string(got.original) + " times and recomputed " +
                               std::to_string(got.recompute) + " times over 1 micro-batches; expected " +
                               std::to_string(got.original + 4) + " and " + std::to_string(got.recompute) +
                               " per micro-batch");
}

}  // namespace
}  // namespace rcts::harness
