// RngStatesTracker: validation before mutation, fork scopes (nesting, exceptions),
// value snapshots (design §5).
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/rng/states_tracker.hpp"

namespace rcts {
namespace {

using Draw = std::pair<uint64_t, uint64_t>;  // (seed, first block) of one reserve

Draw draw(Generator& g, uint64_t blocks) {
  const uint64_t seed = g.seed();
  return {seed, g.reserve(blocks)};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(RngStatesTracker, AddRegistersStateAtOffsetZero) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("a", 10);
  t.add("b", 20);
  EXPECT_TRUE(t.has("a"));
  EXPECT_FALSE(t.has("c"));
  EXPECT_EQ(t.get_states(), (RngStateMap{{"a", {10, 0}}, {"b", {20, 0}}}));
  EXPECT_EQ(t.seeds(), (std::map<uint64_t, std::string>{{10, "a"}, {20, "b"}}));
}

TEST(RngStatesTracker, DuplicateNameMutatesNothing) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("a", 10);
  const auto states = t.get_states();
  const auto seeds = t.seeds();
  try {
    t.add("a", 11);
    FAIL() << "expected duplicate-name error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.message(), "'a' already exists")) << e.message();
    EXPECT_TRUE(contains(e.message(), "seed=10")) << e.message();
  }
  EXPECT_EQ(t.get_states(), states);
  EXPECT_EQ(t.seeds(), seeds);
  // Megatron records seed 11 before noticing the name: here it is still free.
  EXPECT_NO_THROW(t.add("b", 11));
}

TEST(RngStatesTracker, DuplicateSeedMutatesNothing) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("a", 10);
  const auto states = t.get_states();
  const auto seeds = t.seeds();
  try {
    t.add("b", 10);
    FAIL() << "expected duplicate-seed error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.message(), "seed 10 already exists, held by 'a'")) << e.message();
    EXPECT_TRUE(contains(e.message(), "'b'")) << e.message();
  }
  EXPECT_EQ(t.get_states(), states);
  EXPECT_EQ(t.seeds(), seeds);
  EXPECT_FALSE(t.has("b"));
}

TEST(RngStatesTracker, DuplicateNameAndSeedReportsBoth) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("a", 10);
  t.add("b", 20);
  const auto states = t.get_states();
  try {
    t.add("a", 20);
    FAIL() << "expected error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.message(), "'a' already exists")) << e.message();
    EXPECT_TRUE(contains(e.message(), "held by 'b'")) << e.message();
  }
  EXPECT_EQ(t.get_states(), states);
}

TEST(RngStatesTracker, ForkOfUnknownNameThrowsAndChangesNothing) {
  Generator live(1);
  live.reserve(4);
  RngStatesTracker t(live);
  t.add("a", 10);
  try {
    auto f = t.fork("nope");
    FAIL() << "expected unknown-name error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.message(), "'nope'")) << e.message();
    EXPECT_TRUE(contains(e.message(), "known: a")) << e.message();
  }
  EXPECT_EQ(live.state(), (GeneratorState{1, 4}));
  EXPECT_TRUE(t.active_forks().empty());
}

TEST(RngStatesTracker, ForkSwitchesLiveAndStoresAdvancedState) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("a", 10);
  live.reserve(2);
  {
    auto f = t.fork("a");
    EXPECT_EQ(live.state(), (GeneratorState{10, 0}));
    EXPECT_EQ(t.active_forks(), std::vector<std::string>{"a"});
    live.reserve(3);
  }
  EXPECT_EQ(live.state(), (GeneratorState{1, 2}));  // the outer state is back
  EXPECT_EQ(t.get_states().at("a"), (GeneratorState{10, 3}));
  {
    auto f = t.fork("a");
    EXPECT_EQ(live.reserve(1), 3u);  // continues, does not replay
  }
  EXPECT_TRUE(t.active_forks().empty());
}

// The same draws, once with forks one after another and once nested; every draw and
// every final state must agree. Megatron's fork replays the stale slot when fork(A)
// is nested in fork(A): the inner draw would repeat the outer's counters.
TEST(RngStatesTracker, NestedForksEqualSequentialForks) {
  auto setup = [](RngStatesTracker& t) {
    t.add("A", 100);
    t.add("B", 200);
  };
  std::vector<Draw> seq, nest;
  Generator g1(1), g2(1);
  RngStatesTracker t1(g1), t2(g2);
  setup(t1);
  setup(t2);

  seq.push_back(draw(g1, 1));  // default stream
  { auto f = t1.fork("A"); seq.push_back(draw(g1, 3)); }
  { auto f = t1.fork("B"); seq.push_back(draw(g1, 5)); }
  { auto f = t1.fork("A"); seq.push_back(draw(g1, 2)); }
  { auto f = t1.fork("A"); seq.push_back(draw(g1, 4)); }
  { auto f = t1.fork("B"); seq.push_back(draw(g1, 6)); }
  seq.push_back(draw(g1, 1));

  nest.push_back(draw(g2, 1));
  {
    auto fa = t2.fork("A");
    nest.push_back(draw(g2, 3));
    {
      auto fb = t2.fork("B");
      nest.push_back(draw(g2, 5));
      {
        auto fa2 = t2.fork("A");
        nest.push_back(draw(g2, 2));
      }
    }
    nest.push_back(draw(g2, 4));
    {
      auto fb = t2.fork("B");
      nest.push_back(draw(g2, 6));
    }
  }
  nest.push_back(draw(g2, 1));

  const std::vector<Draw> want = {{1, 0}, {100, 0}, {200, 0}, {100, 3}, {100, 5}, {200, 5}, {1, 1}};
  EXPECT_EQ(seq, want);
  EXPECT_EQ(nest, want);
  EXPECT_EQ(t1.get_states(), t2.get_states());
  EXPECT_EQ(t2.get_states(), (RngStateMap{{"A", {100, 9}}, {"B", {200, 11}}}));
  EXPECT_EQ(g1.state(), g2.state());
}

TEST(RngStatesTracker, ForkRestoresOnException) {
  Generator live(1);
  live.reserve(7);
  RngStatesTracker t(live);
  t.add("A", 100);
  t.add("B", 200);
  try {
    auto fa = t.fork("A");
    live.reserve(2);
    auto fb = t.fork("B");
    live.reserve(3);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(live.state(), (GeneratorState{1, 7}));
  EXPECT_EQ(t.get_states(), (RngStateMap{{"A", {100, 2}}, {"B", {200, 3}}}));
  EXPECT_TRUE(t.active_forks().empty());
}

TEST(RngStatesTracker, GetStatesIsAValueSnapshot) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("A", 100);
  const RngStateMap snap = t.get_states();
  std::vector<uint64_t> first, again;
  {
    auto f = t.fork("A");
    first.push_back(live.reserve(4));
    first.push_back(live.reserve(4));
  }
  EXPECT_EQ(snap, (RngStateMap{{"A", {100, 0}}}));  // later draws did not reach it
  EXPECT_EQ(t.get_states().at("A"), (GeneratorState{100, 8}));
  t.set_states(snap);  // restoring it really restores: the same counters again
  {
    auto f = t.fork("A");
    again.push_back(live.reserve(4));
    again.push_back(live.reserve(4));
  }
  EXPECT_EQ(again, first);
}

TEST(RngStatesTracker, SetStatesReplacesWholesale) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("A", 100);
  t.add("B", 200);
  t.set_states({{"C", {300, 5}}});
  EXPECT_FALSE(t.has("A"));
  EXPECT_FALSE(t.has("B"));
  EXPECT_EQ(t.get_states(), (RngStateMap{{"C", {300, 5}}}));
  EXPECT_THROW({ auto f = t.fork("A"); }, Error);
  auto f = t.fork("C");
  EXPECT_EQ(live.state(), (GeneratorState{300, 5}));
}

TEST(RngStatesTracker, ResetClearsStatesAndSeeds) {
  Generator live(1);
  RngStatesTracker t(live);
  t.add("A", 100);
  t.reset();
  EXPECT_TRUE(t.get_states().empty());
  EXPECT_TRUE(t.seeds().empty());
  EXPECT_NO_THROW(t.add("A", 100));
}

TEST(RngStatesTracker, ResetInsideForkDropsTheSlotAndRestoresLive) {
  Generator live(1);
  live.reserve(3);
  RngStatesTracker t(live);
  t.add("A", 100);
  {
    auto f = t.fork("A");
    live.reserve(2);
    t.reset();
  }
  EXPECT_TRUE(t.get_states().empty());
  EXPECT_EQ(live.state(), (GeneratorState{1, 3}));
}

}  // namespace
}  // namespace rcts
