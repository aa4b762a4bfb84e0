// Process-group layout (pure, no MPI): the member lists of every group kind for
// hand-checked worlds, the coordinates, the partition property and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "reference/core/error.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts {
namespace {

using Groups = std::vector<std::vector<int>>;

TEST(GroupLayout, World4Tp2Ep2Etp1) {
  const GroupLayout l = make_layout(4, 2, 2, 1);
  EXPECT_EQ(l, (GroupLayout{.world = 4, .tp = 2, .cp = 1, .dp = 2, .pp = 1, .etp = 1, .ep = 2, .edp = 2}));
  EXPECT_EQ(all_groups(l, GroupKind::tp), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(all_groups(l, GroupKind::dp), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(all_groups(l, GroupKind::etp), (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(all_groups(l, GroupKind::ep), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(all_groups(l, GroupKind::edp), (Groups{{0, 2}, {1, 3}}));
}

TEST(GroupLayout, World8Tp2Ep2Etp2) {
  const GroupLayout l = make_layout(8, 2, 2, 2);
  EXPECT_EQ(l, (GroupLayout{.world = 8, .tp = 2, .cp = 1, .dp = 4, .pp = 1, .etp = 2, .ep = 2, .edp = 2}));
  EXPECT_EQ(all_groups(l, GroupKind::tp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::dp), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::etp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::ep), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::edp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(coords_of(l, 6), (RankCoords{.tp = 0, .cp = 0, .dp = 3, .pp = 0, .etp = 0, .ep = 1, .edp = 1}));
  EXPECT_EQ(coords_of(l, 5), (RankCoords{.tp = 1, .cp = 0, .dp = 2, .pp = 0, .etp = 1, .ep = 0, .edp = 1}));
}

TEST(GroupLayout, World8Tp2Ep4Etp1ExpertsSpanTensorGroups) {
  const GroupLayout l = make_layout(8, 2, 4, 1);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.edp, 2);
  EXPECT_EQ(all_groups(l, GroupKind::tp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::dp), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::ep), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(all_groups(l, GroupKind::edp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(GroupLayout, World16Tp4Ep2Etp2) {
  const GroupLayout l = make_layout(16, 4, 2, 2);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.edp, 4);
  EXPECT_EQ(group_members(l, GroupKind::tp, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(group_members(l, GroupKind::dp, 5), (std::vector<int>{1, 5, 9, 13}));
  EXPECT_EQ(group_members(l, GroupKind::etp, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(group_members(l, GroupKind::ep, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(group_members(l, GroupKind::edp, 5), (std::vector<int>{1, 5, 9, 13}));
  EXPECT_EQ(group_members(l, GroupKind::edp, 14), (std::vector<int>{2, 6, 10, 14}));
  EXPECT_EQ(rank_in_group(l, GroupKind::tp, 5), 1);
  EXPECT_EQ(rank_in_group(l, GroupKind::dp, 5), 1);
  EXPECT_EQ(rank_in_group(l, GroupKind::ep, 5), 0);
  EXPECT_EQ(rank_in_group(l, GroupKind::edp, 14), 3);
}

TEST(GroupLayout, WorldOfOne) {
  const GroupLayout l = make_layout(1, 1, 1, 1);
  for (GroupKind k : kGroupKinds) EXPECT_EQ(all_groups(l, k), (Groups{{0}})) << group_name(k);
}

// Every kind partitions the world into groups of its size, and the index of a rank in
// its member list is its rank in the group, for every layout of small worlds.
TEST(GroupLayout, EveryKindPartitionsTheWorld) {
  for (int w : {1, 2, 3, 4, 6, 8, 12, 16})
    for (int tp = 1; tp <= w; ++tp)
      for (int ep = 1; ep <= w; ++ep)
        for (int etp = 1; etp <= w; ++etp) {
          if (w % tp != 0 || w % (ep * etp) != 0) continue;
          const GroupLayout l = make_layout(w, tp, ep, etp);
          SCOPED_TRACE("world " + std::to_string(w) + " tp " + std::to_string(tp) + " ep " + std::to_string(ep) +
                       " etp " + std::to_string(etp));
          EXPECT_EQ(l.tp * l.cp * l.dp * l.pp, w);
          EXPECT_EQ(l.etp * l.ep * l.edp * l.pp, w);
          for (GroupKind k : kGroupKinds) {
            std::set<int> seen;
            for (const auto& g : all_groups(l, k)) {
              ASSERT_EQ(static_cast<int>(g.size()), group_size(l, k)) << group_name(k);
              ASSERT_TRUE(std::is_sorted(g.begin(), g.end()));
              for (size_t i = 0; i < g.size(); ++i) {
                EXPECT_TRUE(seen.insert(g[i]).second) << group_name(k) << " repeats rank " << g[i];
                EXPECT_EQ(rank_in_group(l, k, g[i]), static_cast<int>(i));
                EXPECT_EQ(group_members(l, k, g[i]), g);
              }
            }
            EXPECT_EQ(static_cast<int>(seen.size()), w) << group_name(k);
          }
          // A dense rank and its expert coordinates name the same world rank.
          for (int r = 0; r < w; ++r) {
            const RankCoords c = coords_of(l, r);
            EXPECT_EQ(c.tp + l.tp * (c.cp + l.cp * (c.dp + l.dp * c.pp)), r);
            EXPECT_EQ(c.etp + l.etp * (c.ep + l.ep * (c.edp + l.edp * c.pp)), r);
          }
        }
}

TEST(GroupLayout, RejectsIndivisibleWorlds) {
  try {
    make_layout(6, 4, 1, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "process groups: world size 6 is not divisible by tp 4 x cp 1 x pp 1 = 4");
  }
  try {
    make_layout(8, 2, 3, 1);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "process groups: world size 8 is not divisible by etp 1 x ep 3 x pp 1 = 3");
  }
  EXPECT_THROW(make_layout(4, 2, 4, 2), Error);
  EXPECT_THROW(make_layout(0, 1, 1, 1), Error);
  EXPECT_THROW(make_layout(4, 0, 1, 1), Error);
  EXPECT_THROW(make_layout(4, 1, -2, 1), Error);
  EXPECT_THROW(coords_of(make_layout(4, 2, 2, 1), 4), Error);
  EXPECT_THROW(group_members(make_layout(4, 2, 2, 1), GroupKind::tp, -1), Error);
}

TEST(GroupLayout, DescribePrintsEveryRankAndItsGroups) {
  EXPECT_EQ(describe(make_layout(4, 2, 2, 1)),
            "world 4\n"
            "  dense : tp 2 x cp 1 x dp 2 x pp 1  (Megatron order tp-cp-ep-dp-pp with ep = 1; tp fastest)\n"
            "  expert: etp 1 x ep 2 x edp 2 x pp 1  (etp fastest, then ep, then edp)\n"
            "rank  tp cp dp pp | etp ep edp |  tp group  dp group  ep group  etp group  edp group\n"
            "   0   0  0  0  0 |   0  0   0 |  {0,1}     {0,2}     {0,1}     {0}        {0,2}\n"
            "   1   1  0  0  0 |   0  1   0 |  {0,1}     {1,3}     {0,1}     {1}        {1,3}\n"
            "   2   0  0  1  0 |   0  0   1 |  {2,3}     {0,2}     {2,3}     {2}        {0,2}\n"
            "   3   1  0  1  0 |   0  1   1 |  {2,3}     {1,3}     {2,3}     {3}        {1,3}\n");
  // Long arithmetic member lists are abbreviated.
  EXPECT_NE(describe(make_layout(16, 1, 1, 1)).find("{0,1,..,15}"), std::string::npos);
}

// design §16: pp is the slowest axis; a stage's neighbours keep (tp, cp, dp).
TEST(GroupLayout, PipelineStagesAndNeighbours) {
  const GroupLayout l = make_layout(8, 2, 1, 1, 2);  // tp 2, dp 2, pp 2
  EXPECT_EQ(l.pp, 2);
  EXPECT_EQ(l.dp, 2);
  for (int r = 0; r < 8; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(coords_of(l, r).pp, r / 4);
    EXPECT_EQ(pipeline_prev(l, r), r < 4 ? -1 : r - 4);
    EXPECT_EQ(pipeline_next(l, r), r < 4 ? r + 4 : -1);
  }
  EXPECT_EQ(group_members(l, GroupKind::tp, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(group_members(l, GroupKind::dp, 5), (std::vector<int>{5, 7}));
  EXPECT_THROW(make_layout(6, 2, 1, 1, 2), Error);  // 6 % (2 x 2) != 0
  EXPECT_THROW(make_layout(4, 1, 1, 1, 0), Error);
}

}  // namespace
}  // namespace rcts
