#include "reference/parallel/groups.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "reference/core/error.hpp"

namespace rcts {

namespace {

// The axis of a group kind: its size and its stride in world rank (the product of
// the sizes of the faster axes of its part).
struct Axis {
  int size;
  int stride;
};

Axis axis_of(const GroupLayout& l, GroupKind k) {
  switch (k) {
    case GroupKind::tp: return {l.tp, 1};
    case GroupKind::dp: return {l.dp, l.tp * l.cp};
    case GroupKind::etp: return {l.etp, 1};
    case GroupKind::ep: return {l.ep, l.etp};
    case GroupKind::edp: return {l.edp, l.etp * l.ep};
  }
  throw Error("unknown group kind " + std::to_string(static_cast<int>(k)));
}

void check_rank(const GroupLayout& l, int world_rank) {
  RCTS_CHECK(world_rank >= 0 && world_rank < l.world,
             "rank " + std::to_string(world_rank) + " is not in a world of " + std::to_string(l.world));
}

std::string format_members(const std::vector<int>& m) {
  std::string s = "{";
  const bool arithmetic =
      m.size() > 4 && std::adjacent_find(m.begin() + 1, m.end(), [&](int a, int b) { return b - a != m[1] - m[0]; }) ==
                          m.end();
  if (arithmetic) return s + std::to_string(m[0]) + "," + std::to_string(m[1]) + ",..," + std::to_string(m.back()) + "}";
  for (size_t i = 0; i < m.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(m[i]);
  }
  return s + "}";
}

}  // namespace

std::string_view group_name(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::dp: return "dp";
    case GroupKind::ep: return "ep";
    case GroupKind::etp: return "etp";
    case GroupKind::edp: return "edp";
  }
  return "?";
}

GroupLayout make_layout(int world, int tp, int ep, int etp, int pp) {
  const auto positive = [](const char* what, int v) {
    RCTS_CHECK(v >= 1, std::string("process groups: ") + what + " must be >= 1, got " + std::to_string(v));
  };
  positive("world size", world);
  positive("tp", tp);
  positive("ep", ep);
  positive("etp", etp);
  positive("pp", pp);
  GroupLayout l;
  l.pp = pp;
  l.world = world;
  l.tp = tp;
  l.ep = ep;
  l.etp = etp;
  const int64_t dense = static_cast<int64_t>(l.tp) * l.cp * l.pp;
  RCTS_CHECK(world % dense == 0, "process groups: world size " + std::to_string(world) + " is not divisible by tp " +
                                     std::to_string(tp) + " x cp " + std::to_string(l.cp) + " x pp " +
                                     std::to_string(l.pp) + " = " + std::to_string(dense));
  const int64_t expert = static_cast<int64_t>(l.etp) * l.ep * l.pp;
  RCTS_CHECK(world % expert == 0, "process groups: world size " + std::to_string(world) + " is not divisible by etp " +
                                      std::to_string(etp) + " x ep " + std::to_string(ep) + " x pp " +
                                      std::to_string(l.pp) + " = " + std::to_string(expert));
  l.dp = static_cast<int>(world / dense);
  l.edp = static_cast<int>(world / expert);
  return l;
}

RankCoords coords_of(const GroupLayout& l, int world_rank) {
  check_rank(l, world_rank);
  RankCoords c;
  int r = world_rank;
  c.tp = r % l.tp, r /= l.tp;
  c.cp = r % l.cp, r /= l.cp;
  c.dp = r % l.dp, r /= l.dp;
  c.pp = r;
  r = world_rank;
  c.etp = r % l.etp, r /= l.etp;
  c.ep = r % l.ep, r /= l.ep;
  c.edp = r % l.edp, r /= l.edp;
  return c;
}

int group_size(const GroupLayout& l, GroupKind k) { return axis_of(l, k).size; }

// pp is the slowest axis of both parts: one stage is tp * cp * dp world ranks.
int pipeline_prev(const GroupLayout& l, int world_rank) {
  check_rank(l, world_rank);
  return coords_of(l, world_rank).pp == 0 ? -1 : world_rank - l.tp * l.cp * l.dp;
}

int pipeline_next(const GroupLayout& l, int world_rank) {
  check_rank(l, world_rank);
  return coords_of(l, world_rank).pp == l.pp - 1 ? -1 : world_rank + l.tp * l.cp * l.dp;
}

int rank_in_group(const GroupLayout& l, GroupKind k, int world_rank) {
  check_rank(l, world_rank);
  const Axis a = axis_of(l, k);
  return world_rank / a.stride % a.size;
}

std::vector<int> group_members(const GroupLayout& l, GroupKind k, int world_rank) {
  const Axis a = axis_of(l, k);
  const int first = world_rank - rank_in_group(l, k, world_rank) * a.stride;
  std::vector<int> m(static_cast<size_t>(a.size));
  for (int i = 0; i < a.size; ++i) m[static_cast<size_t>(i)] = first + i * a.stride;
  return m;
}

std::vector<std::vector<int>> all_groups(const GroupLayout& l, GroupKind k) {
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < l.world; ++r)
    if (rank_in_group(l, k, r) == 0) groups.push_back(group_members(l, k, r));
  return groups;
}

std::string describe(const GroupLayout& l) {
  std::ostringstream os;
  os << "world " << l.world << "\n"
     << "  dense : tp " << l.tp << " x cp " << l.cp << " x dp " << l.dp << " x pp " << l.pp
     << "  (Megatron order tp-cp-ep-dp-pp with ep = 1; tp fastest)\n"
     << "  expert: etp " << l.etp << " x ep " << l.ep << " x edp " << l.edp << " x pp " << l.pp
     << "  (etp fastest, then ep, then edp)\n";
  std::vector<std::array<std::string, 5>> cells(static_cast<size_t>(l.world));
  std::array<size_t, 5> width{};
  for (size_t k = 0; k < kGroupKinds.size(); ++k) width[k] = group_name(kGroupKinds[k]).size() + 6;
  for (int r = 0; r < l.world; ++r)
    for (size_t k = 0; k < kGroupKinds.size(); ++k) {
      auto& c = cells[static_cast<size_t>(r)][k];
      c = format_members(group_members(l, kGroupKinds[k], r));
      width[k] = std::max(width[k], c.size());
    }
  const int rw = std::max<int>(4, static_cast<int>(std::to_string(l.world - 1).size()));
  os << std::setw(rw) << "rank" << "  tp cp dp pp | etp ep edp |";
  for (size_t k = 0; k < kGroupKinds.size(); ++k) {
    const bool last = k + 1 == kGroupKinds.size();
    os << "  " << std::left << std::setw(last ? 0 : static_cast<int>(width[k]))
       << (std::string(group_name(kGroupKinds[k])) + " group") << std::right;
  }
  os << "\n";
  for (int r = 0; r < l.world; ++r) {
    const RankCoords c = coords_of(l, r);
    os << std::setw(rw) << r << "  " << std::setw(2) << c.tp << " " << std::setw(2) << c.cp << " " << std::setw(2)
       << c.dp << " " << std::setw(2) << c.pp << " | " << std::setw(3) << c.etp << " " << std::setw(2) << c.ep << " "
       << std::setw(3) << c.edp << " |";
    for (size_t k = 0; k < kGroupKinds.size(); ++k) {
      const bool last = k + 1 == kGroupKinds.size();
      os << "  " << std::left << std::setw(last ? 0 : static_cast<int>(width[k])) << cells[static_cast<size_t>(r)][k]
         << std::right;
    }
    os << "\n";
  }
  return os.str();
}

ProcessGroups make_groups(Communicator& world, const GroupLayout& layout) {
  RCTS_CHECK(world.size() == layout.world, "make_groups: the " + world.backend() + " communicator has " +
                                               std::to_string(world.size()) + " ranks but the layout is for " +
                                               std::to_string(layout.world));
  ProcessGroups g;
  g.layout_ = layout;
  g.world_ = &world;
  g.coords_ = coords_of(layout, world.rank());
  for (GroupKind k : kGroupKinds) {
    const size_t i = ProcessGroups::index(k);
    g.members_[i] = group_members(layout, k, world.rank());
    if (world.size() == 1) {
      g.comms_[i] = &world;
      continue;
    }
    const int want_rank = rank_in_group(layout, k, world.rank());
    auto sub = world.split(g.members_[i].front(), want_rank);
    RCTS_CHECK(sub->size() == static_cast<int>(g.members_[i].size()) && sub->rank() == want_rank,
               "make_groups: the " + std::string(group_name(k)) + " communicator of world rank " +
                   std::to_string(world.rank()) + " has rank " + std::to_string(sub->rank()) + " of " +
                   std::to_string(sub->size()) + ", expected " + std::to_string(want_rank) + " of " +
                   std::to_string(g.members_[i].size()));
    g.comms_[i] = sub.get();
    g.owned_.push_back(std::move(sub));
  }
  return g;
}

}  // namespace rcts
