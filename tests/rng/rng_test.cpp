// Rng (host, device, tracker of one simulated device) and the ForkRng scope
// (design §5).
#include <gtest/gtest.h>

#include <stdexcept>

#include "reference/rng/rng.hpp"

namespace rcts {
namespace {

void populate(Rng& rng) {
  rng.host().manual_seed(11);
  rng.device().manual_seed(22);
  rng.tracker().add(kDataParallelRng, 22);
  rng.tracker().add(kModelParallelRng, 33);
  rng.host().reserve(1);
  rng.device().reserve(2);
}

// Touch all three parts: host draws, device draws, a tracker stream advances, a new
// tracker state appears.
void disturb(Rng& rng) {
  rng.host().reserve(5);
  rng.device().reserve(6);
  {
    auto f = rng.tracker().fork(kModelParallelRng);
    rng.device().reserve(7);
  }
  rng.tracker().add(kExpertParallelRng, 44);
}

TEST(Rng, StreamNames) {
  EXPECT_STREQ(kDataParallelRng, "data-parallel-rng");
  EXPECT_STREQ(kModelParallelRng, "model-parallel-rng");
  EXPECT_STREQ(kExpertParallelRng, "expert-parallel-rng");
}

TEST(Rng, TrackerForkActsOnTheDeviceGenerator) {
  Rng rng;
  populate(rng);
  {
    auto f = rng.tracker().fork(kModelParallelRng);
    EXPECT_EQ(rng.device().state(), (GeneratorState{33, 0}));
    EXPECT_EQ(rng.host().state(), (GeneratorState{11, 1}));
    rng.device().reserve(3);
  }
  EXPECT_EQ(rng.device().state(), (GeneratorState{22, 2}));
  EXPECT_EQ(rng.tracker().get_states().at(kModelParallelRng), (GeneratorState{33, 3}));
}

TEST(Rng, AllStatesRoundTrip) {
  Rng rng;
  populate(rng);
  const RngStates saved = rng.all_states();
  EXPECT_EQ(saved.host, (GeneratorState{11, 1}));
  EXPECT_EQ(saved.device, (GeneratorState{22, 2}));
  EXPECT_EQ(saved.tracker.size(), 2u);
  disturb(rng);
  EXPECT_NE(rng.all_states(), saved);
  EXPECT_EQ(saved.tracker.at(kModelParallelRng), (GeneratorState{33, 0}));  // a snapshot
  rng.set_all_states(saved);
  EXPECT_EQ(rng.all_states(), saved);
}

TEST(Rng, SnapshotsDifferInEachPart) {
  Rng rng;
  populate(rng);
  const RngStates s = rng.all_states();
  RngStates h = s, d = s, t = s;
  h.host.offset += 1;
  d.device.offset += 1;
  t.tracker.at(kDataParallelRng).offset += 1;
  EXPECT_NE(h, s);
  EXPECT_NE(d, s);
  EXPECT_NE(t, s);
}

TEST(Rng, StatesToString) {
  Rng rng;
  populate(rng);
  EXPECT_EQ(rng.all_states().to_string(),
            "host{seed=11 offset=1} device{seed=22 offset=2} "
            "tracker{data-parallel-rng{seed=22 offset=0} model-parallel-rng{seed=33 offset=0}}");
}

TEST(ForkRng, RestoresAllThreePartsOnNormalExit) {
  Rng rng;
  populate(rng);
  const RngStates before = rng.all_states();
  {
    ForkRng scope(rng);
    EXPECT_EQ(scope.saved(), before);
    disturb(rng);
    EXPECT_NE(rng.all_states().host, before.host);
    EXPECT_NE(rng.all_states().device, before.device);
    EXPECT_NE(rng.all_states().tracker, before.tracker);
  }
  EXPECT_EQ(rng.all_states(), before);
}

TEST(ForkRng, RestoresAllThreePartsOnException) {
  Rng rng;
  populate(rng);
  const RngStates before = rng.all_states();
  try {
    ForkRng scope(rng);
    disturb(rng);
    throw std::runtime_error("recompute failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(rng.all_states(), before);
}

TEST(ForkRng, NestedScopesRestoreTheirOwnSnapshot) {
  Rng rng;
  populate(rng);
  const RngStates outer = rng.all_states();
  {
    ForkRng a(rng);
    rng.device().reserve(4);
    const RngStates mid = rng.all_states();
    {
      ForkRng b(rng);
      disturb(rng);
    }
    EXPECT_EQ(rng.all_states(), mid);
  }
  EXPECT_EQ(rng.all_states(), outer);
}

}  // namespace
}  // namespace rcts
