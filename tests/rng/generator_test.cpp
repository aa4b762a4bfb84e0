// Generator: (seed, offset) bookkeeping, reserve ranges, the dropout block count.
#include <gtest/gtest.h>

#include "reference/core/error.hpp"
#include "reference/rng/generator.hpp"

namespace rcts {
namespace {

TEST(Generator, ManualSeedResetsOffset) {
  Generator g;
  EXPECT_EQ(g.state(), (GeneratorState{0, 0}));
  g.manual_seed(1234);
  g.reserve(9);
  g.manual_seed(99);
  EXPECT_EQ(g.state(), (GeneratorState{99, 0}));
  EXPECT_EQ(Generator(5).state(), (GeneratorState{5, 0}));
}

TEST(Generator, ReserveReturnsStartAndAdvances) {
  Generator g(1234);
  EXPECT_EQ(g.reserve(3), 0u);
  EXPECT_EQ(g.reserve(0), 3u);  // an empty range takes nothing
  EXPECT_EQ(g.reserve(14), 3u);
  EXPECT_EQ(g.offset(), 17u);
  EXPECT_EQ(g.seed(), 1234u);
  EXPECT_EQ(g.to_string(), "seed=1234 offset=17");
}

TEST(Generator, ReserveElementsTakesCeilQuarterBlocks) {
  Generator g(1);
  EXPECT_EQ(g.reserve_elements(0), 0u);
  EXPECT_EQ(g.reserve_elements(1), 0u);  // 1 block
  EXPECT_EQ(g.reserve_elements(4), 1u);  // 1 block
  EXPECT_EQ(g.reserve_elements(5), 2u);  // 2 blocks
  EXPECT_EQ(g.reserve_elements(1000), 4u);  // 250 blocks
  EXPECT_EQ(g.offset(), 254u);
}

TEST(Generator, SetStateIsAValueCopy) {
  Generator g(3);
  g.reserve(5);
  const GeneratorState saved = g.state();
  g.reserve(7);
  EXPECT_EQ(saved, (GeneratorState{3, 5}));
  g.set_state(saved);
  EXPECT_EQ(g.reserve(1), 5u);
}

TEST(Generator, OverflowAndNegativeCountThrowWithoutChange) {
  Generator g(8);
  g.set_state({8, UINT64_MAX - 2});
  EXPECT_EQ(g.reserve(2), UINT64_MAX - 2);
  try {
    g.reserve(1);
    FAIL() << "expected overflow error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("seed=8"), std::string::npos) << e.message();
  }
  EXPECT_EQ(g.offset(), UINT64_MAX);
  Generator h(2);
  EXPECT_THROW(h.reserve_elements(-1), Error);
  EXPECT_EQ(h.offset(), 0u);
}

TEST(GeneratorState, ToStringAndEquality) {
  EXPECT_EQ((GeneratorState{1234, 17}).to_string(), "seed=1234 offset=17");
  EXPECT_NE((GeneratorState{1, 2}), (GeneratorState{2, 1}));
}

}  // namespace
}  // namespace rcts
