// One verdict from every rank's result (ranks.hpp): the worst outcome wins, another
// rank's failing check keeps where it failed and what it could not judge, tagged with
// its rank.
#include <gtest/gtest.h>

#include "harness/ranks/ranks.hpp"

namespace rcts::harness {
namespace {

TEST(RankMerge, AnotherRanksFailureKeepsItsExecutionPointAndNotJudged) {
  CaseResult r0;
  r0.id = "parallel.tp2";
  r0.checks = {{"bitwise", Outcome::pass, "equal"}};
  CaseResult r1 = r0;
  r1.outcome = Outcome::fail;
  r1.reason = "masks differ";
  CheckResult masks{"masks", Outcome::fail, "mask 3 differs"};
  masks.at = ExecPoint{0, 1, Phase::recompute_draw};
  masks.not_judged = {"expert masks: none drawn"};
  r1.checks.push_back(masks);

  const CaseResult m = merge_rank_results({r0, r1});
  EXPECT_EQ(m.outcome, Outcome::fail);
  EXPECT_EQ(m.reason, "rank 1: masks differ");
  ASSERT_EQ(m.checks.size(), 2u);
  EXPECT_EQ(m.checks[1].detail, "rank 1: mask 3 differs");
  ASSERT_TRUE(m.checks[1].at.has_value());
  EXPECT_EQ(*m.checks[1].at, (ExecPoint{0, 1, Phase::recompute_draw}));
  EXPECT_EQ(m.checks[1].not_judged, std::vector<std::string>{"expert masks: none drawn"});
}

}  // namespace
}  // namespace rcts::harness
