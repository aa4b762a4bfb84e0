// Op scratch on the hot path comes from the runtime's workspace: after the first
// micro-batch the pool makes no new heap allocations (same shapes, same blocks), and
// the scratch is accounted as device `workspace` (core attention's (b, a, s, s)
// gradient buffer at least).
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config dense(DType act) {
  Config c = test_support::dense({.hidden = 64, .heads = 4, .seq = 32, .ffn = 256, .micro_batches = 2, .steps = 3});
  c.model.activation_dtype = act;
  return c;
}

void expect_steady(const RunRecord& r) {
  ASSERT_EQ(r.workspace_heap_allocations.size(), 6u);
  EXPECT_GT(r.workspace_heap_allocations.front(), 0);
  for (size_t i = 1; i < r.workspace_heap_allocations.size(); ++i)
    EXPECT_EQ(r.workspace_heap_allocations[i], r.workspace_heap_allocations.front()) << "micro-batch " << i;
  const auto& m = r.config.model;
  const int64_t scores = m.micro_batch_size * m.num_attention_heads * m.seq_length * m.seq_length * 4;
  EXPECT_GE(r.workspace_peak, scores);
}

TEST(WorkspaceReuse, F32StepsMakeNoNewScratchAllocations) { expect_steady(run_cpu(dense(DType::f32))); }

TEST(WorkspaceReuse, Bf16StepsMakeNoNewScratchAllocations) {
  // bf16 activations convert every operand into f32 scratch: far more leases, same rule.
  const RunRecord f32 = run_cpu(dense(DType::f32));
  const RunRecord bf16 = run_cpu(dense(DType::bf16));
  expect_steady(bf16);
  EXPECT_GT(bf16.workspace_peak, f32.workspace_peak);
}

TEST(WorkspaceReuse, FullRecomputeStaysSteadyToo) {
  Config c = dense(DType::f32);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 1;
  expect_steady(run_cpu(c));
}

}  // namespace
}  // namespace rcts
