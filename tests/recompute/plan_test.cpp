// Full-recompute plans (design §6): uniform chunks with a truncated tail, block
// checkpoints the first N layers, eval and selective never checkpoint layers.
#include <gtest/gtest.h>

#include "reference/core/faults.hpp"
#include "reference/recompute/plan.hpp"

namespace rcts {
namespace {

Config full(const char* method, int layers, int n) {
  Config c;
  c.model.num_layers = layers;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = method;
  c.recompute.recompute_num_layers = n;
  return c;
}

TEST(RecomputePlan, UniformSixteenLayersByFiveTruncatesTheTail) {
  const auto plan = recompute_plan(full("uniform", 16, 5));
  EXPECT_EQ(plan, (std::vector<Segment>{{0, 5, true}, {5, 10, true}, {10, 15, true}, {15, 16, true}}));
  EXPECT_EQ(plan_str(plan), "[0,5)* [5,10)* [10,15)* [15,16)*");
}

TEST(RecomputePlan, BlockCheckpointsTheFirstNLayersOneByOne) {
  const auto plan = recompute_plan(full("block", 16, 5));
  ASSERT_EQ(plan.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(plan[static_cast<size_t>(i)], (Segment{i, i + 1, i < 5})) << i;
}

TEST(RecomputePlan, EvalAndSelectiveCheckpointNoLayer) {
  Config eval = full("uniform", 4, 2);
  eval.run.training = false;
  Config sel;
  sel.model.num_layers = 4;
  sel.recompute.recompute_granularity = "selective";
  for (const Config& c : {eval, sel})
    for (const auto& g : recompute_plan(c)) EXPECT_FALSE(g.checkpointed);
}

TEST(RecomputePlan, DropsTailMutantLeavesTheTailPlain) {
  FaultScope f(Fault::uniform_drops_tail);
  const auto plan = recompute_plan(full("uniform", 16, 5));
  EXPECT_FALSE(plan.back().checkpointed);
}

// design §16: a pipeline stage plans its own num_layers / pp layers, indexed from its
// first layer, so block N checkpoints the first N layers of EVERY stage.
TEST(RecomputePlan, BlockCountsFromEachPipelineStagesFirstLayer) {
  Config c = full("block", 8, 1);
  c.parallel.pipeline_model_parallel_size = 2;
  for (int stage : {0, 1}) {
    SCOPED_TRACE(stage);
    const auto plan = recompute_plan(c, stage);
    EXPECT_EQ(plan, (std::vector<Segment>{{0, 1, true}, {1, 2, false}, {2, 3, false}, {3, 4, false}}));
  }
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 3;
  EXPECT_EQ(recompute_plan(c, 1), (std::vector<Segment>{{0, 3, true}, {3, 4, true}}));
}

}  // namespace
}  // namespace rcts
