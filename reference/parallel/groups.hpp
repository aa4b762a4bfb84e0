// Process groups (design §8): which world ranks form the TP, DP, EP, ETP and expert-DP
// groups, and one sub-communicator per group.
//
// Rank order follows Megatron-LM's default order "tp-cp-ep-dp-pp" (parallel_state.py,
// RankGenerator), first axis fastest-varying:
//
//   dense part  (ep does not split dense layers; Megatron builds it with ep = 1):
//     world_rank = tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank))
//     dp = world / (tp * cp * pp)
//   expert part (MoE layers; Megatron's expert RankGenerator with tp = etp, cp = 1):
//     world_rank = etp_rank + etp * (ep_rank + ep * (edp_rank + edp * pp_rank))
//     edp = world / (etp * ep * pp)
//
// A group of kind K holds the world ranks that share every coordinate of K's part
// except K's own; its members are listed in ascending world rank, which is also
// ascending K-coordinate, so a rank's index in the list is its rank in the group.
// cp = 1 for now. Pipeline stages (pp) talk point to point only: pipeline_prev/next
// give a rank's neighbours, the same (tp, cp, dp) one stage up or down (design §16).
//
// Example, world 8, tp 2, ep 2, etp 2 (dp 4, edp 2):
//   tp  {0,1} {2,3} {4,5} {6,7}     dp  {0,2,4,6} {1,3,5,7}
//   etp {0,1} {2,3} {4,5} {6,7}     ep  {0,2} {1,3} {4,6} {5,7}
//   edp {0,4} {1,5} {2,6} {3,7}
#pragma once
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reference/parallel/communicator.hpp"

namespace rcts {

enum class GroupKind { tp, dp, ep, etp, edp };
inline constexpr std::array<GroupKind, 5> kGroupKinds = {GroupKind::tp, GroupKind::dp, GroupKind::ep,
                                                         GroupKind::etp, GroupKind::edp};
// "tp", "dp", "ep", "etp", "edp".
std::string_view group_name(GroupKind k);

struct GroupLayout {
  int world = 1;
  int tp = 1, cp = 1, dp = 1, pp = 1;  // dense part
  int etp = 1, ep = 1, edp = 1;        // expert part (shares pp)
  bool operator==(const GroupLayout&) const = default;
};

// A world rank's coordinate along every axis of both parts.
struct RankCoords {
  int tp = 0, cp = 0, dp = 0, pp = 0;
  int etp = 0, ep = 0, edp = 0;
  bool operator==(const RankCoords&) const = default;
};

// Throws rcts::Error when a size is < 1 or world is not divisible by tp * cp * pp or
// by etp * ep * pp.
GroupLayout make_layout(int world, int tp, int ep, int etp, int pp = 1);

// The world rank of the same (tp, cp, dp) coordinates on the previous / next pipeline
// stage, or -1 on the first / last stage.
int pipeline_prev(const GroupLayout& l, int world_rank);
int pipeline_next(const GroupLayout& l, int world_rank);

RankCoords coords_of(const GroupLayout& l, int world_rank);
int group_size(const GroupLayout& l, GroupKind k);
// The coordinate of `world_rank` along k's axis (= its index in group_members).
int rank_in_group(const GroupLayout& l, GroupKind k, int world_rank);
// The world ranks of the group of kind k that holds `world_rank`, ascending.
std::vector<int> group_members(const GroupLayout& l, GroupKind k, int world_rank);
// Every group of kind k, ordered by its smallest member.
std::vector<std::vector<int>> all_groups(const GroupLayout& l, GroupKind k);

// A table: the sizes and orders, then one row per world rank with its coordinates and
// the members of each of its groups.
std::string describe(const GroupLayout& l);

// One rank's sub-communicators. Borrows `world`, which must outlive it.
class ProcessGroups {
 public:
  const GroupLayout& layout() const { return layout_; }
  int world_rank() const { return world_->rank(); }
  const RankCoords& coords() const { return coords_; }
  Communicator& world() const { return *world_; }
  Communicator& comm(GroupKind k) const { return *comms_[index(k)]; }
  int rank(GroupKind k) const { return comms_[index(k)]->rank(); }
  int size(GroupKind k) const { return comms_[index(k)]->size(); }
  const std::vector<int>& members(GroupKind k) const { return members_[index(k)]; }

  Communicator& tp() const { return comm(GroupKind::tp); }
  Communicator& dp() const { return comm(GroupKind::dp); }
  Communicator& ep() const { return comm(GroupKind::ep); }
  Communicator& etp() const { return comm(GroupKind::etp); }
  Communicator& edp() const { return comm(GroupKind::edp); }

 private:
  friend ProcessGroups make_groups(Communicator& world, const GroupLayout& layout);
  static size_t index(GroupKind k) { return static_cast<size_t>(k); }
  GroupLayout layout_;
  RankCoords coords_;
  Communicator* world_ = nullptr;
  std::array<Communicator*, 5> comms_{};
  std::array<std::vector<int>, 5> members_;
  std::vector<std::unique_ptr<Communicator>> owned_;
};

// Collective over `world` (world.size() must equal layout.world). A world of one uses
// `world` itself for every group; larger worlds split it once per group kind (colour:
// the group's smallest member, key: the rank in the group) and check that each new
// communicator has the expected size and rank.
ProcessGroups make_groups(Communicator& world, const GroupLayout& layout);

}  // namespace rcts
