// FP8 delayed scaling (reference/runtime/fp8.hpp) on the CPU reference: the linear
// inputs are really quantised (the run differs from the one without FP8), every site
// publishes an amax history of the configured length whose scale follows the recipe's
// formula, a recompute leaves history and scale bitwise as the no-recompute run has
// them, and the mutant that advances them in recompute is visible.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/core/faults.hpp"
#include "reference/driver/execute.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config base() {
  Config c = test_support::tiny_dense(2, 2);
  c.model.activation_dtype = DType::f32;
  c.model.fp8 = "e4m3";
  c.model.fp8_amax_history_len = 3;
  c.model.fp8_amax_compute_algo = "max";
  c.model.fp8_margin = 1;
  c.run.steps = 2;
  return c;
}

TEST(Fp8Delayed, QuantisesTheLinearInputs) {
  Config off = base();
  off.model.fp8.reset();
  const RunRecord a = run_cpu(base()), b = run_cpu(off);
  EXPECT_NE(std::memcmp(&a.losses[0], &b.losses[0], sizeof(double)), 0) << "FP8 changed nothing";
  EXPECT_EQ(b.side_effects.count("layers.0.mlp.fc1.input.fp8.scale"), 0u);
}

TEST(Fp8Delayed, EverySiteKeepsItsHistoryAndTheRecipeScale) {
  const RunRecord r = run_cpu(base());
  for (const char* site : {"layers.0.attention.qkv.input", "layers.0.attention.proj.input", "layers.1.mlp.fc1.input",
                           "layers.1.mlp.fc2.input"}) {
    const std::string s = site;
    ASSERT_EQ(r.side_effects.count(s + ".fp8.amax_history.2"), 1u) << s;
    EXPECT_EQ(r.side_effects.count(s + ".fp8.amax_history.3"), 0u) << s;
    // 4 forwards (2 steps x 2 micro-batches) into a history of 3: all three slots hold an amax.
    double ref = 0;
    for (int i = 0; i < 3; ++i) {
      const double h = r.side_effects.at(s + ".fp8.amax_history." + std::to_string(i));
      EXPECT_GT(h, 0.0) << s << " " << i;
      ref = std::max(ref, h);
    }
    // scale = (448 / max(history)) / 2^margin, in float.
    const float want = (448.0f / static_cast<float>(ref)) * 0.5f;
    EXPECT_EQ(r.side_effects.at(s + ".fp8.scale"), static_cast<double>(want)) << s;
  }
}

TEST(Fp8Delayed, RecomputeReplaysAndTheMutantAdvances) {
  Config mlp = base();
  mlp.recompute.recompute_granularity = "selective";
  mlp.recompute.recompute_modules = {"mlp"};
  const RunRecord want = run_cpu(base());
  EXPECT_EQ(run_cpu(mlp).side_effects, want.side_effects);
  Config full = base();
  full.recompute.recompute_granularity = "full";
  full.recompute.recompute_method = "block";
  full.recompute.recompute_num_layers = 1;
  const RunRecord got = run_cpu(full);
  EXPECT_EQ(got.side_effects, want.side_effects);
  EXPECT_EQ(std::memcmp(&got.losses.back(), &want.losses.back(), sizeof(double)), 0);

  FaultScope fault(Fault::fp8_amax_advanced_in_recompute);
  EXPECT_NE(run_cpu(mlp).side_effects, want.side_effects);
}

}  // namespace
}  // namespace rcts
