// Per-rank seeds (design §5). Expected numbers are written out by hand from
// seed + 2718 + tp and seed + 1024 + 100*ep + etp.
#include <gtest/gtest.h>

#include "kernels/common/philox.hpp"
#include "reference/core/error.hpp"
#include "reference/rng/seeds.hpp"

namespace rcts {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SeedPlan, ExactSeedsForSeveralRanks) {
  // (seed, tp, ep, etp) -> device, data-parallel, model-parallel, expert-parallel
  EXPECT_EQ(seed_plan(1234, 0, 0, 0), (SeedPlan{1234, 1234, 3952, 2258}));
  EXPECT_EQ(seed_plan(1234, 1, 0, 0), (SeedPlan{1234, 1234, 3953, 2258}));
  EXPECT_EQ(seed_plan(1234, 3, 2, 1), (SeedPlan{1234, 1234, 3955, 2459}));
  EXPECT_EQ(seed_plan(0, 0, 0, 0), (SeedPlan{0, 0, 2718, 1024}));
  EXPECT_EQ(seed_plan(42, 7, 5, 3), (SeedPlan{42, 42, 2767, 1569}));
  EXPECT_EQ(seed_plan(1334, 2, 0, 1), (SeedPlan{1334, 1334, 4054, 2359}));  // pp rank 1: seed + 100
}

TEST(ModelParallelSeed, SeedsAllStreamsAtOffsetZero) {
  Rng rng;
  rng.host().manual_seed(5);
  rng.host().reserve(3);
  rng.device().reserve(9);
  rng.tracker().add("stale", 77);
  model_parallel_seed(rng, 1234, 1, 2, 1);
  const RngStates s = rng.all_states();
  EXPECT_EQ(s.host, (GeneratorState{1234, 0}));
  EXPECT_EQ(s.device, (GeneratorState{1234, 0}));
  EXPECT_EQ(s.tracker, (RngStateMap{{kDataParallelRng, {1234, 0}},
                                    {kModelParallelRng, {3953, 0}},
                                    {kExpertParallelRng, {2459, 0}}}));
  EXPECT_EQ(rng.tracker().seeds().size(), 3u);  // "stale" and its seed are gone
}

TEST(ModelParallelSeed, CollisionIsAClearErrorAndRngIsUnchanged) {
  // 1694 + 6 == 100 * 17 + 0
  const SeedPlan p = seed_plan(1234, 6, 17, 0);
  EXPECT_EQ(p.model_parallel, 3958u);
  EXPECT_EQ(p.expert_parallel, 3958u);

  Rng rng;
  model_parallel_seed(rng, 99, 0, 0, 0);
  rng.device().reserve(4);
  { auto f = rng.tracker().fork(kModelParallelRng); rng.device().reserve(2); }
  const RngStates before = rng.all_states();
  try {
    model_parallel_seed(rng, 1234, 6, 17, 0);
    FAIL() << "expected a collision error";
  } catch (const Error& e) {
    const std::string& m = e.message();
    EXPECT_TRUE(contains(m, "model-parallel-rng")) << m;
    EXPECT_TRUE(contains(m, "expert-parallel-rng")) << m;
    EXPECT_TRUE(contains(m, "tp_rank 6")) << m;
    EXPECT_TRUE(contains(m, "ep_rank 17")) << m;
    EXPECT_TRUE(contains(m, "etp_rank 0")) << m;
    EXPECT_TRUE(contains(m, "3958")) << m;
  }
  EXPECT_EQ(rng.all_states(), before);
}

TEST(ModelParallelSeed, OtherCollidingRanks) {
  Rng rng;
  // 1694 + 94 == 1700 + 88 and 1694 + 0 == 1600 + 94
  EXPECT_THROW(model_parallel_seed(rng, 7, 94, 17, 88), Error);
  EXPECT_THROW(model_parallel_seed(rng, 7, 0, 16, 94), Error);
  EXPECT_NO_THROW(model_parallel_seed(rng, 7, 6, 17, 1));
}

TEST(ModelParallelSeed, RejectsBadRanksAndOverflowAndActiveFork) {
  Rng rng;
  model_parallel_seed(rng, 1, 0, 0, 0);
  const RngStates before = rng.all_states();
  EXPECT_THROW(model_parallel_seed(rng, 1, -1, 0, 0), Error);
  EXPECT_THROW(model_parallel_seed(rng, 1, 0, -2, 0), Error);
  EXPECT_THROW(model_parallel_seed(rng, UINT64_MAX - 100, 0, 0, 0), Error);
  EXPECT_EQ(rng.all_states(), before);
  {
    auto f = rng.tracker().fork(kDataParallelRng);
    try {
      model_parallel_seed(rng, 2, 0, 0, 0);
      FAIL() << "expected an error inside a fork";
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.message(), "active fork of 'data-parallel-rng'")) << e.message();
    }
  }
  EXPECT_EQ(rng.all_states(), before);
}

TEST(SeedFaults, TpWithoutRankDropsTheTpRank) {
  const SeedFaults f{.tp_without_rank = true};
  EXPECT_EQ(seed_plan(1234, 0, 2, 1, f), (SeedPlan{1234, 1234, 3952, 2459}));
  EXPECT_EQ(seed_plan(1234, 3, 2, 1, f), (SeedPlan{1234, 1234, 3952, 2459}));
  EXPECT_NE(seed_plan(1234, 3, 2, 1).model_parallel, seed_plan(1234, 0, 2, 1).model_parallel);
}

TEST(SeedFaults, EpWithoutRankDropsEpAndEtpRanks) {
  const SeedFaults f{.ep_without_rank = true};
  EXPECT_EQ(seed_plan(1234, 1, 0, 0, f), (SeedPlan{1234, 1234, 3953, 2258}));
  EXPECT_EQ(seed_plan(1234, 1, 2, 1, f), (SeedPlan{1234, 1234, 3953, 2258}));
  EXPECT_EQ(seed_plan(1234, 1, 5, 0, f).expert_parallel, seed_plan(1234, 1, 0, 3, f).expert_parallel);
  // The fault also moves the seeds model_parallel_seed installs.
  Rng rng;
  model_parallel_seed(rng, 1234, 1, 2, 1, f);
  EXPECT_EQ(rng.tracker().get_states().at(kExpertParallelRng), (GeneratorState{2258, 0}));
}

// What the seeds are for: TP ranks share the default (hidden-dropout) stream and
// differ in the model-parallel (attention-dropout) stream.
TEST(ModelParallelSeed, TpRanksShareDefaultStreamAndDifferInModelParallel) {
  Rng r0, r1;
  model_parallel_seed(r0, 1234, 0, 0, 0);
  model_parallel_seed(r1, 1234, 1, 0, 0);
  EXPECT_EQ(philox::block(r0.device().seed(), r0.device().reserve(1)),
            philox::block(r1.device().seed(), r1.device().reserve(1)));
  auto mp_block = [](Rng& r) {
    auto f = r.tracker().fork(kModelParallelRng);
    return philox::block(r.device().seed(), r.device().reserve(1));
  };
  EXPECT_NE(mp_block(r0), mp_block(r1));
}

// design §16: Megatron-LM seeds pipeline stage p with seed + 100 * p.
TEST(PipelineStageSeed, OffsetsByOneHundredPerStage) {
  EXPECT_EQ(pipeline_stage_seed(1234, 0), 1234u);
  EXPECT_EQ(pipeline_stage_seed(1234, 1), 1334u);
  EXPECT_EQ(pipeline_stage_seed(1234, 3), 1534u);
  EXPECT_THROW(pipeline_stage_seed(1234, -1), Error);
  EXPECT_THROW(pipeline_stage_seed(UINT64_MAX - 50, 1), Error);
}

}  // namespace
}  // namespace rcts
