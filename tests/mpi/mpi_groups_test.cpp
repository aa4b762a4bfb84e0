// make_groups on MPI: for every layout the world admits, each sub-communicator holds
// exactly the world ranks make_layout lists, in that order, and reduces over them.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/runtime/reduce.hpp"
#include "reference/parallel/groups.hpp"
#include "tests/mpi/mpi_env.hpp"

namespace rcts {
namespace {

using mpi_test::bits;
using mpi_test::input;
using mpi_test::world;

TEST(MpiProcessGroups, EveryLayoutSplitsIntoTheListedMembers) {
  Communicator& w = world();
  const int n = w.size();
  int layouts = 0;
  for (int tp = 1; tp <= n; ++tp)
    for (int ep = 1; ep <= n; ++ep)
      for (int etp = 1; etp <= n; ++etp) {
        if (n % tp != 0 || n % (ep * etp) != 0) continue;
        ++layouts;
        const GroupLayout layout = make_layout(n, tp, ep, etp);
        const ProcessGroups g = make_groups(w, layout);
        SCOPED_TRACE("tp " + std::to_string(tp) + " ep " + std::to_string(ep) + " etp " + std::to_string(etp));
        EXPECT_EQ(g.world_rank(), w.rank());
        EXPECT_EQ(g.coords(), coords_of(layout, w.rank()));
        for (GroupKind k : kGroupKinds) {
          Communicator& sub = g.comm(k);
          const auto members = sub.all_gather(std::vector<int>{w.rank()});
          EXPECT_EQ(members, group_members(layout, k, w.rank())) << group_name(k);
          EXPECT_EQ(g.members(k), members) << group_name(k);
          EXPECT_EQ(sub.rank(), rank_in_group(layout, k, w.rank())) << group_name(k);
          EXPECT_EQ(sub.backend(), "mpi");
        }
      }
  EXPECT_GT(layouts, 0);
}

TEST(MpiProcessGroups, ReductionsStayInsideTheGroup) {
  Communicator& w = world();
  const int n = w.size();
  // tp 2 (when the world is even) and ep spanning each data-parallel replica.
  const int tp = n % 2 == 0 ? 2 : 1;
  const GroupLayout layout = make_layout(n, tp, n / tp, 1);
  const ProcessGroups g = make_groups(w, layout);
  for (GroupKind k : kGroupKinds) {
    const auto members = group_members(layout, k, w.rank());
    const uint64_t seed = 77 + static_cast<uint64_t>(k);
    std::vector<float> v(5);
    for (int64_t i = 0; i < 5; ++i) v[static_cast<size_t>(i)] = input<float>(seed, i, w.rank());
    all_reduce_sum(g.comm(k), cpu::default_backend(), v.data(), 5);
    for (int64_t i = 0; i < 5; ++i) {
      // Rank order inside the group is ascending world rank.
      float want = input<float>(seed, i, members[0]);
      for (size_t m = 1; m < members.size(); ++m) want = want + input<float>(seed, i, members[m]);
      EXPECT_EQ(bits(v[static_cast<size_t>(i)]), bits(want)) << group_name(k) << " element " << i;
    }
  }
}

}  // namespace
}  // namespace rcts
