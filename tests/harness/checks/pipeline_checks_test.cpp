// The memory check's pipeline figure (design §16): a stage's measured peak of bytes
// held for backward over the 1F1B schedule against the model's in-flight peak.
// Expected bytes derived by hand: f32 (d = 4), s = 8, b = 2, h = 16, a = 2, ffn = 64,
// dropout on: one layer saves 8·d·sbh (LN and linear inputs, q, k, v) = 8192, two
// masks of sbh = 512, softmax and dropout outputs d·as²b each + their mask as²b =
// 2304, GeLU and fc2 inputs d·sb·ffn each = 8192: 19200 bytes; a stage of 2 layers
// stores 38400, which is also its backward peak without recompute.
#include <gtest/gtest.h>

#include "harness/checks/pipeline_checks.hpp"
#include "tests/support/configs.hpp"

namespace rcts::harness {
namespace {

RunRecord stage_run(int pp_rank, int64_t peak) {
  RunRecord r;
  Config& c = r.config;
  c = test_support::tiny_dense(4, 4);
  c.model.attention_dropout = 0.1;
  c.model.hidden_dropout = 0.1;
  c.model.activation_dtype = DType::f32;
  c.parallel.pipeline_model_parallel_size = 2;
  r.coords.pp = pp_rank;
  r.timeline.samples = {{0, 19200, 0}, {1, peak, 0}, {2, 0, 0}};
  return r;
}

TEST(PipelinePeak, EachStageHoldsItsInFlightMicroBatches) {
  // Stage 0: P = min(2 - 0, 4) = 2 -> 38400 + 38400; stage 1: P = 1 -> 38400.
  EXPECT_FALSE(pipeline_peak_differs(stage_run(0, 76800)));
  EXPECT_FALSE(pipeline_peak_differs(stage_run(1, 38400)));
  const auto why = pipeline_peak_differs(stage_run(1, 76800));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("stage 1 held at most 76800 bytes"), std::string::npos) << *why;
  EXPECT_NE(why->find("says 38400"), std::string::npos) << *why;
  EXPECT_NE(why->find("(1 micro-batches in flight)"), std::string::npos) << *why;
}

TEST(PipelinePeak, EvalHoldsNothingAndRecordsNoSample) {
  RunRecord r = stage_run(0, 0);
  r.config.run.training = false;
  r.timeline.samples.clear();
  EXPECT_FALSE(pipeline_peak_differs(r));
  r.timeline.samples = {{0, 64, 0}};
  ASSERT_TRUE(pipeline_peak_differs(r));
}

TEST(PipelinePeak, ATruncatedTimelineIsNotAPass) {
  RunRecord r = stage_run(0, 76800);
  r.timeline.truncated = true;
  const auto why = pipeline_peak_differs(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("truncated"), std::string::npos) << *why;
}

}  // namespace
}  // namespace rcts::harness
