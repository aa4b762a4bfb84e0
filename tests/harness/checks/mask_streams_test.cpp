// The stream rule of the masks check (mask_oracle::check_mask_streams): synthetic
// mask logs that break one clause each, and real runs with the RNG faults that only
// golden digests used to catch (a fork that does not store its state back, RNG
// states replayed every micro-batch): the masks check must fail on them by itself.
#include <gtest/gtest.h>

#include "harness/checks/checks.hpp"
#include "harness/checks/mask_oracle.hpp"
#include "reference/core/faults.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts::harness {
namespace {

using mask_oracle::check_mask_streams;

MaskRecord draw(const std::string& site, const std::string& stream, uint64_t seed, uint64_t offset, int64_t numel,
                int mb = 0, bool recompute = false) {
  MaskRecord m;
  m.site = site;
  m.kind = "attention";
  m.generator = stream;
  m.seed = seed;
  m.offset = offset;
  m.numel = numel;
  m.p = 0.1;
  m.digest = 1000 + offset;
  m.micro_batch = mb;
  m.recompute = recompute;
  return m;
}

// Two streams, two micro-batches, a recompute in each; generators end where the log does.
RunRecord good_run() {
  RunRecord r;
  r.masks = {draw("a", "model-parallel-rng", 7, 0, 16, 0),  draw("h", "device-default", 5, 0, 9, 0),
             draw("b", "model-parallel-rng", 7, 4, 5, 0),   draw("a", "model-parallel-rng", 7, 0, 16, 0, true),
             draw("a", "model-parallel-rng", 7, 6, 16, 1),  draw("h", "device-default", 5, 3, 9, 1),
             draw("b", "model-parallel-rng", 7, 10, 5, 1),  draw("a", "model-parallel-rng", 7, 6, 16, 1, true)};
  RngStates end;
  end.device = {5, 6};
  end.tracker = {{"data-parallel-rng", {5, 0}}, {"model-parallel-rng", {7, 12}}, {"expert-parallel-rng", {9, 0}}};
  r.rng_after = {RngStates{}, end};
  return r;
}

TEST(MaskStreams, ContiguousStreamsAndReplayedRecomputesPass) {
  const auto why = check_mask_streams(good_run());
  EXPECT_FALSE(why) << *why;
}

TEST(MaskStreams, FirstDrawMustStartAtBlockZero) {
  RunRecord r = good_run();
  for (auto& m : r.masks)
    if (m.generator == "device-default") m.offset += 1;
  r.rng_after.back().device.offset += 1;
  const auto why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the stream starts at block 0 after seeding"), std::string::npos) << *why;
}

TEST(MaskStreams, ReusedBlocksAcrossMicroBatchesFail) {
  RunRecord r = good_run();
  r.masks[4].offset = 0;  // micro-batch 1 redraws micro-batch 0's mask of site a
  r.masks[7].offset = 0;
  const auto why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("forward draw of a (micro-batch 1)"), std::string::npos) << *why;
  EXPECT_NE(why->find("blocks [0, 4) are drawn again"), std::string::npos) << *why;
}

TEST(MaskStreams, SkippedBlocksFail) {
  RunRecord r = good_run();
  r.masks[2].offset = 5;  // one block consumed by nothing in the log
  const auto why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("blocks [4, 5) were consumed by no logged draw"), std::string::npos) << *why;
}

TEST(MaskStreams, StreamsSharingASeedFail) {
  RunRecord r = good_run();
  for (auto& m : r.masks)
    if (m.generator == "device-default") m.seed = 7;
  const auto why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("share seed 7"), std::string::npos) << *why;
}

TEST(MaskStreams, PipelineRecomputeReplaysItsOwnMicroBatch) {
  // 1F1B on a first stage (design §16): micro-batch 1's forward runs before micro-batch
  // 0's backward, so 0's recompute follows a later forward draw of its site.
  RunRecord r;
  r.masks = {draw("a", "model-parallel-rng", 7, 0, 16, 0), draw("a", "model-parallel-rng", 7, 4, 16, 1),
             draw("a", "model-parallel-rng", 7, 0, 16, 0, true), draw("a", "model-parallel-rng", 7, 4, 16, 1, true)};
  RngStates end;
  end.tracker = {{"model-parallel-rng", {7, 8}}};
  r.rng_after = {RngStates{}, end};
  auto why = check_mask_streams(r);
  EXPECT_FALSE(why) << *why;
  r.masks[2].offset = 4;  // micro-batch 0's recompute replays micro-batch 1's draw
  r.masks[2].digest = r.masks[1].digest;
  why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("recompute draw of a (micro-batch 0) used seed 7 blocks [4, 8), but the forward draw it replays "
                      "(micro-batch 0) used seed 7 blocks [0, 4)"),
            std::string::npos)
      << *why;
}

TEST(MaskStreams, RecomputeMustReplayTheLatestForwardOfItsSite) {
  // Two steps of one micro-batch: step 1's recompute replays step 0's draw of the site
  // (same site, same micro-batch index, but not the draw it recomputes).
  RunRecord r = good_run();
  for (auto& m : r.masks) m.micro_batch = 0;
  r.masks[7].offset = 0;
  r.masks[7].digest = r.masks[0].digest;
  auto why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("recompute draw of a (micro-batch 0) used seed 7 blocks [0, 4), but the forward draw it "
                      "replays (micro-batch 0) used seed 7 blocks [6, 10)"),
            std::string::npos)
      << *why;

  r = good_run();
  r.masks[3].digest ^= 1;  // same place, different mask
  why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("its mask differs"), std::string::npos) << *why;

  r = good_run();
  r.masks.insert(r.masks.begin(), draw("z", "model-parallel-rng", 7, 0, 4, 0, true));
  why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("before any forward draw of that site"), std::string::npos) << *why;
}

TEST(MaskStreams, GeneratorsMustEndWhereTheLogEnds) {
  RunRecord r = good_run();
  r.rng_after.back().tracker["model-parallel-rng"].offset = 0;  // the fork never stored its state
  auto why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("'model-parallel-rng' stands at seed=7 offset=0, but its logged draws end at block 12"),
            std::string::npos)
      << *why;
  r = good_run();
  r.rng_after.back().tracker["data-parallel-rng"].offset = 2;  // consumed, never logged
  why = check_mask_streams(r);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("'data-parallel-rng'"), std::string::npos) << *why;
}

// A small real run: two layers, three micro-batches, two steps, both dropouts.
Config small_config() { return test_support::dense({.ffn = 32, .micro_batches = 3, .steps = 2}); }

TEST(MaskStreams, CleanRunPasses) {
  const RunRecord r = test_support::run_cpu(small_config());
  const CheckResult res = check_masks(r, r, "baseline");
  EXPECT_EQ(res.outcome, Outcome::pass) << res.detail;
}

// These faults change baseline and variants alike, so the bitwise and rng checks,
// which compare runs with each other, cannot see them: the masks check must.
TEST(MaskStreams, ForkWithoutWriteBackFailsTheMasksCheck) {
  FaultScope fault(Fault::fork_no_write_back);
  const RunRecord r = test_support::run_cpu(small_config());
  EXPECT_EQ(check_rng(r, r, "baseline").outcome, Outcome::pass);
  const CheckResult res = check_masks(r, r, "baseline");
  ASSERT_EQ(res.outcome, Outcome::fail);
  EXPECT_NE(res.detail.find("forward draw of layers.1.attention.dropout (micro-batch 0) from 'model-parallel-rng'"),
            std::string::npos)
      << res.detail;
  EXPECT_NE(res.detail.find("are drawn again"), std::string::npos) << res.detail;
}

TEST(MaskStreams, RngReplayedEveryMicroBatchFailsTheMasksCheck) {
  FaultScope fault(Fault::rng_replayed_per_micro_batch);
  const RunRecord r = test_support::run_cpu(small_config());
  EXPECT_EQ(check_rng(r, r, "baseline").outcome, Outcome::pass);
  const CheckResult res = check_masks(r, r, "baseline");
  ASSERT_EQ(res.outcome, Outcome::fail);
  EXPECT_NE(res.detail.find("(micro-batch 1) from"), std::string::npos) << res.detail;
  EXPECT_NE(res.detail.find("are drawn again"), std::string::npos) << res.detail;
}

}  // namespace
}  // namespace rcts::harness
