// First divergence in execution order on hand-built run records:
// a recompute draw one block late in step 1 is placed at step 1, named with its stream,
// seed and offsets; an earlier forward difference wins; a failing case's reason leads
// with the earliest divergence and lists every failing check in execution order.
#include "harness/checks/divergence.hpp"

#include <gtest/gtest.h>

namespace rcts::harness {
namespace {

constexpr uint64_t kSeed = 1234;
constexpr uint64_t kModelParallelSeed = kSeed + 2718;  // design §5, tp_rank 0

MaskRecord attention_draw(uint64_t offset, uint64_t digest, bool recompute) {
  MaskRecord m;
  m.site = "layers.0.attention.dropout";
  m.kind = "attention";
  m.generator = "model-parallel-rng";
  m.seed = kModelParallelSeed;
  m.offset = offset;
  m.numel = 16;  // 4 Philox blocks
  m.p = 0.1;
  m.digest = digest;
  m.recompute = recompute;
  return m;
}

// Two steps of one micro-batch each, seeded as design §5 says.
RunRecord two_steps() {
  RunRecord r;
  r.config.run.seed = kSeed;
  r.config.run.micro_batches = 1;
  r.config.run.steps = 2;
  r.losses = {0.5, 0.25};
  r.outputs.resize(2);
  r.input_grads.resize(2);
  r.rng_initial.tracker["data-parallel-rng"] = {kSeed, 0};
  r.rng_initial.tracker["model-parallel-rng"] = {kModelParallelSeed, 0};
  r.rng_initial.tracker["expert-parallel-rng"] = {kSeed + 1024, 0};
  r.masks = {attention_draw(0, 11, false), attention_draw(4, 22, false)};
  return r;
}

TEST(FirstDivergence, RecomputeDrawOneBlockLateInStepOne) {
  RunRecord base = two_steps();
  RunRecord run = two_steps();
  run.masks = {attention_draw(0, 11, false), attention_draw(0, 11, true),  // step 0: replays its forward
               attention_draw(4, 22, false), attention_draw(5, 33, true)};  // step 1: one block late
  // A symptom later in execution order: the RNG states after step 1.
  base.rng_after.resize(2);
  run.rng_after = base.rng_after;
  run.rng_after[1].device.offset = 3;
  const auto d = first_divergence(base, run);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->at, (ExecPoint{1, 0, Phase::recompute_draw}));
  EXPECT_EQ(d->at.str(), "step 1 micro-batch 0, recompute dropout draw");
  EXPECT_NE(d->what.find("recompute draw of layers.0.attention.dropout from 'model-parallel-rng' with seed " +
                         std::to_string(kModelParallelSeed) + " offset 5 (blocks [5, 9))"),
            std::string::npos)
      << d->what;
  EXPECT_NE(d->what.find("the forward draw it replays (step 1 micro-batch 0) used seed " +
                         std::to_string(kModelParallelSeed) + " offset 4 (blocks [4, 8)); 1 block(s) late"),
            std::string::npos)
      << d->what;
  const auto later = rng_divergence(base, run);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->at, (ExecPoint{1, 0, Phase::rng_after}));
  EXPECT_NE(later->what.find("'device-default' expected seed=0 offset=0, got seed=0 offset=3"), std::string::npos)
      << later->what;
  // A loss that differs in step 1 comes before step 1's backward, so it would lead.
  run.losses[1] = 0.3;
  EXPECT_EQ(first_divergence(base, run)->at, (ExecPoint{1, 0, Phase::forward}));
}

TEST(FirstDivergence, EarlierForwardDrawWins) {
  const RunRecord base = two_steps();
  RunRecord run = two_steps();
  run.masks = {attention_draw(1, 11, false), attention_draw(5, 33, true)};
  const auto d = mask_divergence(base, run);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->at, (ExecPoint{0, 0, Phase::forward_draw}));
  EXPECT_NE(d->what.find("1 block(s) late"), std::string::npos) << d->what;
}

TEST(FirstDivergence, SeedAgainstDesignEvenWhenTheBaselineAgrees) {
  RunRecord base = two_steps();
  base.masks[0].seed = base.masks[1].seed = kSeed + 2718 + 1;  // a tp_rank the run does not have
  const auto d = mask_divergence(base, base);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->at, (ExecPoint{0, 0, Phase::forward_draw}));
  EXPECT_NE(d->what.find("design §5 says stream 'model-parallel-rng' seed " + std::to_string(kModelParallelSeed)),
            std::string::npos)
      << d->what;
}

TEST(FirstDivergence, IdenticalRunsHaveNone) {
  const RunRecord r = two_steps();
  EXPECT_FALSE(first_divergence(r, r).has_value());
}

TEST(FirstDivergence, RngStatesAfterAMicroBatchNameTheStream) {
  RunRecord base = two_steps(), run = two_steps();
  base.rng_after.resize(2);
  run.rng_after.resize(2);
  base.rng_after[1].tracker["model-parallel-rng"] = {kModelParallelSeed, 8};
  run.rng_after[1].tracker["model-parallel-rng"] = {kModelParallelSeed, 9};
  const auto d = rng_divergence(base, run);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->at, (ExecPoint{1, 0, Phase::rng_after}));
  EXPECT_NE(d->what.find("'model-parallel-rng' expected"), std::string::npos) << d->what;
}

// Another implementation's dump (PyTorch: opaque generator states, its own masks): design
// §5's seeds do not bind it, only equality with its own baseline does.
RunRecord opaque(const RunRecord& r) {
  RunRecord o = r;
  o.seed_offset_rng = false;
  o.rcts_mask_rule = false;
  o.rng_initial.tracker.clear();
  for (auto& m : o.masks) m.generator = "torch-cpu", m.seed = 0, m.offset = 0;
  o.rng_after_opaque = {{{"torch-cpu", "aa"}}, {{"torch-cpu", "bb"}}};
  return o;
}

TEST(FirstDivergence, OpaqueRngIsComparedWithTheBaselineNotWithDesignSeeds) {
  const RunRecord base = opaque(two_steps());
  RunRecord run = opaque(two_steps());
  EXPECT_FALSE(first_divergence(base, run));
  run.rng_after_opaque[1]["torch-cpu"] = "cc";
  const auto d = first_divergence(base, run);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->at.step, 1);
  EXPECT_NE(d->what.find("opaque"), std::string::npos) << d->what;
  run = opaque(two_steps());
  run.masks[1].digest = 99;  // the second forward draw: another mask
  const auto m = first_divergence(base, run);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->at.step, 1);
}

TEST(FailureReason, LeadsWithTheCauseAndListsEveryFailingCheckInExecutionOrder) {
  std::vector<CheckResult> checks = {
      {"bitwise", Outcome::fail, "v: 6 of 133 differ", {}, ExecPoint{0, 0, Phase::backward}},
      {"memory", Outcome::fail, "v: layer 0 saved 10 bytes", {}, std::nullopt},
      {"rng", Outcome::pass, "v: fine", {}, std::nullopt},
      {"masks", Outcome::fail, "v: recompute draw ...", {}, ExecPoint{0, 0, Phase::recompute_draw}},
      {"rng", Outcome::fail, "w: states differ", {}, ExecPoint{0, 0, Phase::rng_after}},
  };
  const std::vector<std::pair<std::string, Divergence>> firsts = {
      {"w", {{0, 1, Phase::forward}, "later"}}, {"v", {{0, 0, Phase::recompute_draw}, "the draw"}}};
  EXPECT_EQ(failure_reason(firsts, checks),
            "first divergence (v): step 0 micro-batch 0, recompute dropout draw: the draw\n"
            "masks: v: recompute draw ...\n"
            "bitwise: v: 6 of 133 differ\n"
            "rng: w: states differ\n"
            "memory: v: layer 0 saved 10 bytes");
  EXPECT_EQ(failure_reason({}, {checks[1]}), "memory: v: layer 0 saved 10 bytes");
}

TEST(FailureReason, MultiRankLeadsWithEveryRanksFirstDivergence) {
  std::vector<CaseResult> ranks(3);
  ranks[0].reason = "masks_across_ranks: identical masks";
  ranks[1].reason = "first divergence (baseline): RNG seeding: 'model-parallel-rng' seeded ...\nrng: baseline: wrong seed";
  ranks[2].reason = "first divergence (v): step 0 micro-batch 1, forward: loss ...\nbitwise: v: 1 of 9 differ";
  EXPECT_EQ(lead_with_rank_divergences(ranks, "rank 2: first divergence (v): step 0 micro-batch 1, forward: loss ...\n"
                                              "bitwise: v: 1 of 9 differ"),
            "rank 1: first divergence (baseline): RNG seeding: 'model-parallel-rng' seeded ...\n"
            "rank 2: first divergence (v): step 0 micro-batch 1, forward: loss ...\n"
            "bitwise: v: 1 of 9 differ");
  ranks[1].reason = ranks[2].reason = "memory: no";
  EXPECT_EQ(lead_with_rank_divergences(ranks, "rank 0: masks_across_ranks: x"), "rank 0: masks_across_ranks: x");
}

}  // namespace
}  // namespace rcts::harness
