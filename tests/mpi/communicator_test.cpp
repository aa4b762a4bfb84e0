// Communicator without MPI: SingleCommunicator as copies, the base-class reductions'
// rank order and the reduction_arrival_order mutant, checked with a scripted
// communicator that plays one rank of a larger world.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/core/error.hpp"
#include "reference/core/faults.hpp"
#include "reference/parallel/communicator.hpp"
#include "reference/runtime/reduce.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts {
namespace {

// Plays rank `rank` of a world of sends.size() ranks whose contributions are fixed up
// front: sends[r] is rank r's whole send buffer (the caller's own slot is replaced by
// what it actually passes). all_to_allv supports equal blocks per peer only.
class ScriptedCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  ScriptedCommunicator(int rank, std::vector<std::vector<std::byte>> sends) : rank_(rank), sends_(std::move(sends)) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(sends_.size()); }
  std::string backend() const override { return "scripted"; }
  void all_gather(const void* send, void* recv, int64_t bytes) override {
    for (int r = 0; r < size(); ++r) {
      const void* src = r == rank_ ? send : peer(r, 0, bytes);
      std::memcpy(static_cast<char*>(recv) + r * bytes, src, static_cast<size_t>(bytes));
    }
  }
  void all_to_allv(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) override {
    int64_t at = 0;
    for (int p = 0; p < size(); ++p) {
      RCTS_CHECK(send_bytes[p] == send_bytes[0] && recv_bytes[p] == send_bytes[0], "scripted: unequal blocks");
      const void* src = p == rank_ ? static_cast<const char*>(send) + rank_ * send_bytes[p]
                                   : peer(p, rank_ * recv_bytes[p], recv_bytes[p]);
      std::memcpy(static_cast<char*>(recv) + at, src, static_cast<size_t>(recv_bytes[p]));
      at += recv_bytes[p];
    }
  }
  void broadcast(void*, int64_t, int) override { throw Error("scripted: broadcast is not scripted"); }
  void barrier() override {}

 private:
  const void* peer(int r, int64_t offset, int64_t bytes) const {
    const auto& s = sends_[static_cast<size_t>(r)];
    RCTS_CHECK(offset + bytes <= static_cast<int64_t>(s.size()), "scripted: rank " + std::to_string(r) + " sent less");
    return s.data() + offset;
  }
  int rank_;
  std::vector<std::vector<std::byte>> sends_;
};

template <class T>
std::vector<std::vector<std::byte>> as_bytes(const std::vector<std::vector<T>>& per_rank) {
  std::vector<std::vector<std::byte>> out;
  for (const auto& v : per_rank) {
    std::vector<std::byte> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    out.push_back(std::move(b));
  }
  return out;
}

// Inputs where float addition order matters: ((1e8 + 1) - 1e8) + 1 = 1 in rank order,
// but (((1 - 1e8) + 1) + 1e8) = 0 when rank 1 starts with its own value.
const std::vector<std::vector<float>> kFloatInputs = {{1e8f}, {1.0f}, {-1e8f}, {1.0f}};
const std::vector<std::vector<double>> kDoubleInputs = {{1e17}, {1.0}, {-1e17}, {1.0}};

template <class T>
T all_reduce_on(int rank, const std::vector<std::vector<T>>& inputs) {
  ScriptedCommunicator c(rank, as_bytes(inputs));
  std::vector<T> v = inputs[static_cast<size_t>(rank)];
  all_reduce_sum(c, cpu::default_backend(), v.data(), static_cast<int64_t>(v.size()));
  return v[0];
}

TEST(Reduction, AllReduceSumsInRankOrderOnEveryRank) {
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(all_reduce_on(r, kFloatInputs), 1.0f) << "rank " << r;
    EXPECT_EQ(all_reduce_on(r, kDoubleInputs), 1.0) << "rank " << r;
  }
}

TEST(Reduction, ArrivalOrderMutantStartsAtTheOwnRank) {
  FaultScope fault(parse_fault("reduction_arrival_order"));
  const float want_f[4] = {1.0f, 0.0f, 1.0f, 0.0f};
  const double want_d[4] = {1.0, 0.0, 1.0, 0.0};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(all_reduce_on(r, kFloatInputs), want_f[r]) << "rank " << r;
    EXPECT_EQ(all_reduce_on(r, kDoubleInputs), want_d[r]) << "rank " << r;
  }
}

TEST(Reduction, SummationOrder) {
  ScriptedCommunicator c(2, as_bytes(kFloatInputs));
  EXPECT_EQ(c.summation_order(), (std::vector<int>{0, 1, 2, 3}));
  FaultScope fault(Fault::reduction_arrival_order);
  EXPECT_EQ(c.summation_order(), (std::vector<int>{2, 3, 0, 1}));
}

// Three ranks, two elements per rank chunk; chunk 1 (rank 1's) is
// (1 - 1e8) + 1e8 = 0 in rank order and (-1e8 + 1e8) + 1 = 1 from rank 1 on.
TEST(Reduction, ReduceScatterGivesEachRankItsChunkOfTheRankOrderedSum) {
  const std::vector<std::vector<float>> in = {{10, 20, 1.0f, 0.5f, 7, 8},
                                              {30, 40, -1e8f, 0.25f, 9, 10},
                                              {50, 60, 1e8f, 0.125f, 11, 12}};
  const auto out_on = [&](int rank) {
    ScriptedCommunicator c(rank, as_bytes(in));
    std::vector<float> out(2, -1.0f);
    reduce_scatter_sum(c, cpu::default_backend(), in[static_cast<size_t>(rank)].data(), out.data(), 2);
    return out;
  };
  EXPECT_EQ(out_on(0), (std::vector<float>{90, 120}));
  EXPECT_EQ(out_on(1), (std::vector<float>{0.0f, 0.875f}));
  EXPECT_EQ(out_on(2), (std::vector<float>{27, 30}));
  FaultScope fault(Fault::reduction_arrival_order);
  EXPECT_EQ(out_on(1), (std::vector<float>{1.0f, 0.875f}));
}

TEST(Reduction, ReduceScatterDouble) {
  const std::vector<std::vector<double>> in = {{1, 2}, {3, 4}};
  ScriptedCommunicator c(1, as_bytes(in));
  double out = 0;
  reduce_scatter_sum(c, cpu::default_backend(), in[1].data(), &out, 1);
  EXPECT_EQ(out, 6.0);
}

TEST(Reduction, AllToAllRoutesBlocksByRank) {
  // rank p's block for rank q is 10 * p + q.
  const std::vector<std::vector<int32_t>> send = {{0, 1, 2}, {10, 11, 12}, {20, 21, 22}};
  ScriptedCommunicator c(1, as_bytes(send));
  std::vector<int32_t> recv(3);
  c.all_to_all(send[1].data(), recv.data(), sizeof(int32_t));
  EXPECT_EQ(recv, (std::vector<int32_t>{1, 11, 21}));
}

TEST(Reduction, NegativeCountsAreErrors) {
  SingleCommunicator one;
  float x = 0;
  EXPECT_THROW(all_reduce_sum(one, cpu::default_backend(), &x, -1), Error);
  EXPECT_THROW(reduce_scatter_sum(one, cpu::default_backend(), &x, &x, -1), Error);
  EXPECT_THROW(one.all_to_all(&x, &x, -4), Error);
}

TEST(SingleCommunicator, CollectivesAreCopies) {
  SingleCommunicator one;
  Communicator& c = one;
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  EXPECT_EQ(c.backend(), "single");

  const std::vector<int> src = {1, 2, 3};
  EXPECT_EQ(one.all_gather(src), src);
  std::vector<int> dst(3);
  c.all_gather(std::span<const int>(src), std::span<int>(dst));
  EXPECT_EQ(dst, src);
  std::vector<int> wrong(4);
  EXPECT_THROW(c.all_gather(std::span<const int>(src), std::span<int>(wrong)), Error);

  const int64_t bytes = 3 * sizeof(int);
  std::vector<int> moved(3);
  c.all_to_allv(src.data(), &bytes, moved.data(), &bytes);
  EXPECT_EQ(moved, src);
  const int64_t fewer = 2 * sizeof(int);
  EXPECT_THROW(c.all_to_allv(src.data(), &bytes, moved.data(), &fewer), Error);
  std::fill(moved.begin(), moved.end(), 0);
  c.all_to_all(src.data(), moved.data(), bytes);
  EXPECT_EQ(moved, src);

  std::vector<int> data = src;
  c.broadcast(data.data(), bytes, 0);
  EXPECT_EQ(data, src);
  EXPECT_THROW(c.broadcast(data.data(), bytes, 1), Error);

  std::vector<float> f = {1.5f, -2.0f};
  all_reduce_sum(c, cpu::default_backend(), f.data(), 2);
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  std::vector<double> d = {0.25, 3.0}, d_out(2);
  reduce_scatter_sum(c, cpu::default_backend(), d.data(), d_out.data(), 2);
  EXPECT_EQ(d_out, d);
  c.barrier();

  const auto sub = c.split(7, 0);
  EXPECT_EQ(sub->size(), 1);
  EXPECT_EQ(sub->backend(), "single");
}

TEST(SingleCommunicator, MutantCannotChangeAOneRankSum) {
  FaultScope fault(Fault::reduction_arrival_order);
  SingleCommunicator one;
  float x = 0.1f;
  all_reduce_sum(one, cpu::default_backend(), &x, 1);
  EXPECT_EQ(x, 0.1f);
}

TEST(ProcessGroups, WorldOfOneUsesTheWorldForEveryGroup) {
  SingleCommunicator one;
  const ProcessGroups g = make_groups(one, make_layout(1, 1, 1, 1));
  for (GroupKind k : kGroupKinds) {
    EXPECT_EQ(&g.comm(k), &one) << group_name(k);
    EXPECT_EQ(g.rank(k), 0);
    EXPECT_EQ(g.size(k), 1);
    EXPECT_EQ(g.members(k), (std::vector<int>{0}));
  }
  EXPECT_EQ(&g.tp(), &one);
  EXPECT_THROW(make_groups(one, make_layout(2, 2, 1, 1)), Error);
}

TEST(ProcessGroups, SplitsPerGroupKindWithColourAndKey) {
  // Rank 5 of world 8, tp 2 ep 2 etp 2: each group is split once, coloured by its
  // smallest member and keyed by the rank in the group.
  struct Recorder final : Communicator {
    using Communicator::all_gather;
    int rank() const override { return 5; }
    int size() const override { return 8; }
    std::string backend() const override { return "recorder"; }
    void all_gather(const void*, void*, int64_t) override {}
    void all_to_allv(const void*, const int64_t*, void*, const int64_t*) override {}
    void broadcast(void*, int64_t, int) override {}
    void barrier() override {}
    std::unique_ptr<Communicator> split(int color, int key) override {
      calls.emplace_back(color, key);
      // A group whose member list for rank 5 is known: return a world of that size.
      struct Fixed final : Communicator {
        int r, n;
        Fixed(int r_, int n_) : r(r_), n(n_) {}
        int rank() const override { return r; }
        int size() const override { return n; }
        std::string backend() const override { return "fixed"; }
        void all_gather(const void*, void*, int64_t) override {}
        void all_to_allv(const void*, const int64_t*, void*, const int64_t*) override {}
        void broadcast(void*, int64_t, int) override {}
        void barrier() override {}
      };
      const int n = static_cast<int>(calls.size()) == 2 ? 4 : 2;  // dp has 4 members
      return std::make_unique<Fixed>(key, n);
    }
    std::vector<std::pair<int, int>> calls;
  } world;
  const ProcessGroups g = make_groups(world, make_layout(8, 2, 2, 2));
  // Order of kinds: tp, dp, ep, etp, edp.
  EXPECT_EQ(world.calls,
            (std::vector<std::pair<int, int>>{{4, 1}, {1, 2}, {5, 0}, {4, 1}, {1, 1}}));
  EXPECT_EQ(g.members(GroupKind::ep), (std::vector<int>{5, 7}));
  EXPECT_EQ(g.rank(GroupKind::dp), 2);
  EXPECT_EQ(g.coords().edp, 1);
}

}  // namespace
}  // namespace rcts
