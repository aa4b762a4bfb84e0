// Every single-rank CPU case's baseline against the independent float64 oracle
// (f64_block.hpp): losses, outputs, input gradients, parameter gradients and the SGD
// updates at a stated tolerance, plus, exactly, the parameter initialisation, the
// dropout draws (site, stream, seed, first block, size) and the side effects' keys.
// Golden digests only say "the bits did not change"; this says the bits are (within
// rounding) the documented model, so a scaling or RNG bug cannot be blessed by a
// careless regen. The oracle itself is checked against finite differences first.
//
// Error measure, per tensor: max_i |ref_i - oracle_i| / max_i |oracle_i| (relative to
// the tensor's scale, so near-zero elements do not blow it up); per loss: relative.
// Parameters: with SGD between steps the update (final - initial) is compared, so a
// wrong learning rate shows at the update's scale, not hidden under the weights'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/cases/case.hpp"
#include "oracle/compare.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"
#include "tests/support/configs.hpp"

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace rcts::harness {
// gtest names a parameterised case by its id, not by its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.id; }
}  // namespace rcts::harness

namespace rcts::oracle {
namespace {

using Vec = std::vector<double>;

// --- the oracle against finite differences (float64 end to end) ----------------------

Config tiny(const std::string& activation, int experts, bool grouped) {
  Config c = test_support::dense({.hidden = 8, .seq = 4, .ffn = 12});
  c.model.activation = activation;
  c.model.activation_dtype = DType::f64;
  c.model.attention_dropout = 0.2;
  c.model.hidden_dropout = 0.1;
  c.model.num_moe_experts = experts;
  c.model.moe_router_topk = 2;
  c.model.moe_grouped_gemm = grouped;
  c.model.moe_ffn_hidden_size = experts ? 6 : 0;
  c.model.moe_shared_expert_intermediate_size = experts ? 4 : 0;
  c.model.moe_expert_dropout = experts ? 0.1 : 0.0;
  return c;
}

// Central differences of the loss, at a few elements of every parameter and of the
// input, equal the oracle's analytic gradients. Dropout masks are the same in every
// run (fresh streams), so the loss is a smooth function of each value.
void expect_gradients_match_finite_differences(const Config& c) {
  const RankCoords coords;
  const F64Run base = run_f64(c, coords);
  const double h = 1e-6;
  auto fd = [&](const std::string& name, int64_t i) {
    const double up = run_f64(c, coords, Perturbation{name, i, h}).losses.at(0);
    const double down = run_f64(c, coords, Perturbation{name, i, -h}).losses.at(0);
    return (up - down) / (2 * h);
  };
  int checked = 0;
  for (const auto& [name, g] : base.grads) {
    const double scale = std::max(1e-3, *std::max_element(g.begin(), g.end(), [](double a, double b) {
      return std::fabs(a) < std::fabs(b);
    }));
    for (int64_t i : {int64_t{0}, static_cast<int64_t>(g.size()) / 2, static_cast<int64_t>(g.size()) - 1}) {
      EXPECT_NEAR(fd(name, i), g[static_cast<size_t>(i)], 1e-6 * std::fabs(scale)) << name << "[" << i << "]";
      ++checked;
    }
  }
  const Vec& dx = base.input_grads.at(0);
  for (int64_t i : {int64_t{0}, int64_t{5}, static_cast<int64_t>(dx.size()) - 1})
    EXPECT_NEAR(fd("input", i), dx[static_cast<size_t>(i)], 1e-8) << "input[" << i << "]";
  EXPECT_GT(checked, 20);
}

TEST(F64Oracle, DenseGeluMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny("gelu", 0, false)); }
TEST(F64Oracle, DenseSwigluMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny("swiglu", 0, false)); }
TEST(F64Oracle, MoeGroupedMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny("gelu", 4, true)); }
TEST(F64Oracle, MoePerExpertSwigluMatchesFiniteDifferences) {
  expect_gradients_match_finite_differences(tiny("swiglu", 4, false));
}

// MLA (design §14), with and without query compression.
Config tiny_mla(int q_lora_rank) {
  Config c = tiny("gelu", 0, false);
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = q_lora_rank;
  c.model.kv_lora_rank = 5;
  c.model.qk_head_dim = 3;
  c.model.qk_pos_emb_head_dim = 4;
  c.model.v_head_dim = 2;
  return c;
}
TEST(F64Oracle, MlaMatchesFiniteDifferences) { expect_gradients_match_finite_differences(tiny_mla(6)); }
TEST(F64Oracle, MlaWithoutQueryCompressionMatchesFiniteDifferences) {
  expect_gradients_match_finite_differences(tiny_mla(0));
}

// --- every single-rank case's baseline against the oracle ----------------------------

class CaseVsOracle : public ::testing::TestWithParam<harness::Case> {};

TEST_P(CaseVsOracle, BaselineMatchesTheF64Oracle) {
  const harness::Case& c = GetParam();
  Config cfg = config_from_json(c.config, c.file.string() + " (config)");
  validate_or_throw(cfg, c.file.string());
  const OraclePlan plan = plan_oracle_comparison(c.id, cfg, c.seed_ranks);
  if (!plan.skip.empty()) GTEST_SKIP() << c.id << ": " << plan.skip;
  if (!plan.note.empty()) std::cout << "  " << c.id << ": " << plan.note << "\n";
  const RunRecord ref = execute(plan.config, cpu::default_backend(), c.seed_ranks);
  const OracleComparison cmp = compare_with_oracle(plan.id, plan.config, ref, plan.run);
  for (const auto& f : cmp.failures) ADD_FAILURE() << f << "\n" << cmp.report;
  std::cout << "  " << cmp.report << "\n";
}

// The cases a single CPU process runs (config_error cases reject their config and
// multi-rank cases need mpiexec: neither has a single-rank baseline to compare).
std::vector<harness::Case> single_rank_cases() {
  std::vector<harness::Case> out;
  for (auto& c : harness::load_cases({std::filesystem::path(RCTS_SOURCE_DIR) / "cases"})) {
    if (c.expect.config_error) continue;
    if (std::find(c.ranks.begin(), c.ranks.end(), 1) == c.ranks.end()) continue;
    if (std::find(c.backends.begin(), c.backends.end(), "cpu") == c.backends.end()) continue;
    out.push_back(std::move(c));
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<harness::Case>& info) {
  std::string id = info.param.id;
  for (auto& ch : id)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return id;
}

INSTANTIATE_TEST_SUITE_P(Cases, CaseVsOracle, ::testing::ValuesIn(single_rank_cases()), case_name);

}  // namespace
}  // namespace rcts::oracle
