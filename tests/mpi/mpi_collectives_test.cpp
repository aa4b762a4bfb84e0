// MpiCommunicator collectives on the whole world, run under mpiexec with 2 and 4 ranks.
// Inputs come from (seed, index, rank), so every rank computes the expected result of
// every collective locally. Checks follow the collectives (never an ASSERT between two
// collectives), so a failure on one rank cannot leave the others waiting.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/runtime/reduce.hpp"
#include "reference/core/error.hpp"
#include "reference/core/faults.hpp"
#include "reference/parallel/mpi_communicator.hpp"
#include "tests/mpi/mpi_env.hpp"

namespace rcts {
namespace {

using mpi_test::bits;
using mpi_test::input;
using mpi_test::world;

constexpr uint64_t kSeed = 20240607;

template <class T>
std::vector<T> shard(uint64_t seed, int64_t n, int rank) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = input<T>(seed, i, rank);
  return v;
}

// The rank-ordered sum ((x_0 + x_1) + x_2) + ... of element i, from generated inputs.
template <class T>
T rank_ordered_sum(uint64_t seed, int64_t i, int size) {
  T acc = input<T>(seed, i, 0);
  for (int r = 1; r < size; ++r) acc = acc + input<T>(seed, i, r);
  return acc;
}

TEST(MpiCommunicator, Identity) {
  Communicator& c = world();
  EXPECT_EQ(c.backend(), "mpi");
  int size = 0, rank = -1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  EXPECT_EQ(c.size(), size);
  EXPECT_EQ(c.rank(), rank);
  c.barrier();
}

TEST(MpiCommunicator, AllGatherPlacesRankRAtOffsetR) {
  Communicator& c = world();
  const int64_t n = 13;
  const auto mine = shard<float>(kSeed, n, c.rank());
  std::vector<float> all(static_cast<size_t>(n * c.size()));
  c.all_gather(static_cast<const void*>(mine.data()), static_cast<void*>(all.data()), n * 4);
  const auto typed = c.all_gather(mine);
  // In place: this rank's block already sits in the receive buffer.
  std::vector<float> in_place(static_cast<size_t>(n * c.size()), -7.0f);
  std::copy(mine.begin(), mine.end(), in_place.begin() + n * c.rank());
  c.all_gather(static_cast<const void*>(in_place.data() + n * c.rank()), static_cast<void*>(in_place.data()), n * 4);
  for (int r = 0; r < c.size(); ++r)
    for (int64_t i = 0; i < n; ++i) {
      const auto want = bits(input<float>(kSeed, i, r));
      const auto at = static_cast<size_t>(r * n + i);
      EXPECT_EQ(bits(all[at]), want) << "rank " << r << " element " << i;
      EXPECT_EQ(bits(typed[at]), want);
      EXPECT_EQ(bits(in_place[at]), want);
    }
}

// Tests that need a peer skip on a world of one (the binary is registered for 2 and 4).
#define RCTS_NEED_RANKS(c, n) \
  if ((c).size() < (n)) GTEST_SKIP() << "needs " << (n) << " ranks, the world has " << (c).size()

TEST(MpiCommunicator, MismatchedAllGatherFailsOnEveryRank) {
  Communicator& c = world();
  RCTS_NEED_RANKS(c, 2);
  std::vector<char> send(8), recv(8 * static_cast<size_t>(c.size()));
  const int64_t bytes = c.rank() == 0 ? 4 : 8;
  try {
    c.all_gather(send.data(), recv.data(), bytes);
    ADD_FAILURE() << "expected an error on rank " << c.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "mpi all_gather: rank 1 passes 8 bytes but rank 0 passes 4");
  }
  c.barrier();  // the communicator is still usable afterwards
}

// Rank p sends (3p + 5q + 1) % 7 bytes to rank q: uneven, some blocks empty (from 3 ranks).
int64_t a2a_bytes(int p, int q) { return (3 * p + 5 * q + 1) % 7; }
unsigned char a2a_byte(int p, int q, int64_t j) {
  return static_cast<unsigned char>(mpi_test::mix(kSeed, static_cast<uint64_t>(j), static_cast<uint64_t>(p * 64 + q)));
}

TEST(MpiCommunicator, AllToAllvWithUnevenSizes) {
  Communicator& c = world();
  const int w = c.size(), me = c.rank();
  std::vector<int64_t> send_bytes(static_cast<size_t>(w)), recv_bytes(static_cast<size_t>(w));
  std::vector<unsigned char> send;
  for (int q = 0; q < w; ++q) {
    send_bytes[static_cast<size_t>(q)] = a2a_bytes(me, q);
    recv_bytes[static_cast<size_t>(q)] = a2a_bytes(q, me);
    for (int64_t j = 0; j < a2a_bytes(me, q); ++j) send.push_back(a2a_byte(me, q, j));
  }
  std::vector<unsigned char> recv(static_cast<size_t>(std::accumulate(recv_bytes.begin(), recv_bytes.end(), int64_t{0})),
                                  0xEE);
  c.all_to_allv(send.data(), send_bytes.data(), recv.data(), recv_bytes.data());
  size_t at = 0;
  for (int p = 0; p < w; ++p)
    for (int64_t j = 0; j < a2a_bytes(p, me); ++j, ++at)
      EXPECT_EQ(recv[at], a2a_byte(p, me, j)) << "byte " << j << " from rank " << p;
  EXPECT_EQ(at, recv.size());
}

TEST(MpiCommunicator, AllToAllEqualBlocks) {
  Communicator& c = world();
  const int w = c.size();
  std::vector<int32_t> send(static_cast<size_t>(2 * w)), recv(static_cast<size_t>(2 * w));
  for (int q = 0; q < w; ++q) {
    send[static_cast<size_t>(2 * q)] = 1000 * c.rank() + q;
    send[static_cast<size_t>(2 * q + 1)] = -(1000 * c.rank() + q);
  }
  c.all_to_all(send.data(), recv.data(), 2 * sizeof(int32_t));
  for (int p = 0; p < w; ++p) {
    EXPECT_EQ(recv[static_cast<size_t>(2 * p)], 1000 * p + c.rank());
    EXPECT_EQ(recv[static_cast<size_t>(2 * p + 1)], -(1000 * p + c.rank()));
  }
}

TEST(MpiCommunicator, MismatchedAllToAllvFailsOnEveryRank) {
  Communicator& c = world();
  RCTS_NEED_RANKS(c, 2);
  const auto w = static_cast<size_t>(c.size());
  std::vector<int64_t> send_bytes(w, 4), recv_bytes(w, 4);
  if (c.rank() == 0) recv_bytes[1] = 5;  // rank 1 sends only 4
  std::vector<char> send(4 * w), recv(4 * w + 1);
  try {
    c.all_to_allv(send.data(), send_bytes.data(), recv.data(), recv_bytes.data());
    ADD_FAILURE() << "expected an error on rank " << c.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "mpi all_to_allv: rank 1 sends 4 bytes to rank 0, which expects 5");
  }
  c.barrier();
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  Communicator& c = world();
  for (int root = 0; root < c.size(); ++root) {
    std::vector<double> data = shard<double>(kSeed + 1, 9, c.rank());
    c.broadcast(data.data(), static_cast<int64_t>(data.size() * sizeof(double)), root);
    for (int64_t i = 0; i < 9; ++i)
      EXPECT_EQ(bits(data[static_cast<size_t>(i)]), bits(input<double>(kSeed + 1, i, root))) << "root " << root;
  }
  c.broadcast(nullptr, 0, c.size() - 1);  // nothing to move is still legal
}

TEST(MpiCommunicator, MismatchedBroadcastFailsOnEveryRank) {
  Communicator& c = world();
  RCTS_NEED_RANKS(c, 2);
  double x = 0;
  try {
    c.broadcast(&x, sizeof x, c.rank() == 0 ? 0 : 1);
    ADD_FAILURE() << "expected an error on rank " << c.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "mpi broadcast: rank 1 names root 1 but rank 0 names root 0");
  }
  try {
    c.broadcast(&x, sizeof x, c.size());
    ADD_FAILURE() << "expected an error on rank " << c.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "mpi broadcast: root " + std::to_string(c.size()) + " is not a rank of " +
                               std::to_string(c.size()));
  }
  c.barrier();
}

template <class T>
void check_all_reduce() {
  Communicator& c = world();
  const int64_t n = 1000;
  std::vector<T> data = shard<T>(kSeed + 2, n, c.rank());
  all_reduce_sum(c, cpu::default_backend(), data.data(), n);
  // The result of every rank, to compare bits across ranks.
  const auto everyone = c.all_gather(data);
  int64_t order_matters = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T want = rank_ordered_sum<T>(kSeed + 2, i, c.size());
    EXPECT_EQ(bits(data[static_cast<size_t>(i)]), bits(want)) << "element " << i;
    for (int r = 0; r < c.size(); ++r)
      EXPECT_EQ(bits(everyone[static_cast<size_t>(r * n + i)]), bits(want)) << "rank " << r << " element " << i;
    // Reverse order, to show these inputs can tell orders apart (from 3 ranks).
    T reverse = input<T>(kSeed + 2, i, c.size() - 1);
    for (int r = c.size() - 2; r >= 0; --r) reverse = reverse + input<T>(kSeed + 2, i, r);
    order_matters += bits(reverse) != bits(want);
  }
  if (c.size() >= 3) {
    EXPECT_GT(order_matters, 0) << "the inputs do not exercise the summation order";
  }
}

TEST(MpiCommunicator, AllReduceSumFloatIsRankOrderedAndIdenticalOnEveryRank) { check_all_reduce<float>(); }
TEST(MpiCommunicator, AllReduceSumDoubleIsRankOrderedAndIdenticalOnEveryRank) { check_all_reduce<double>(); }

template <class T>
void check_reduce_scatter() {
  Communicator& c = world();
  const int64_t per_rank = 37;
  const auto in = shard<T>(kSeed + 3, per_rank * c.size(), c.rank());
  std::vector<T> out(static_cast<size_t>(per_rank));
  reduce_scatter_sum(c, cpu::default_backend(), in.data(), out.data(), per_rank);
  for (int64_t i = 0; i < per_rank; ++i) {
    const T want = rank_ordered_sum<T>(kSeed + 3, c.rank() * per_rank + i, c.size());
    EXPECT_EQ(bits(out[static_cast<size_t>(i)]), bits(want)) << "element " << i;
  }
}

TEST(MpiCommunicator, ReduceScatterSumFloat) { check_reduce_scatter<float>(); }
TEST(MpiCommunicator, ReduceScatterSumDouble) { check_reduce_scatter<double>(); }

// The mutant adds from the caller's own rank on. Rank 0 holds 1e8, the last rank
// -1e8, the others 3: in rank order every 3 is lost against 1e8 (its ulp is 8) and the
// sum is 0; the last rank starts with -1e8 + 1e8 = 0 and keeps 3 * (size - 2).
TEST(MpiCommunicator, ArrivalOrderMutantChangesTheResultOnSomeRank) {
  Communicator& c = world();
  if (c.size() < 3) GTEST_SKIP() << "a sum of two floats is commutative: no order can change a 2-rank result";
  const auto value = [&](int r) { return r == 0 ? 1e8f : r == c.size() - 1 ? -1e8f : 3.0f; };
  float want = value(0);
  for (int r = 1; r < c.size(); ++r) want = want + value(r);

  float correct = value(c.rank());
  all_reduce_sum(c, cpu::default_backend(), &correct, 1);
  float mutated = value(c.rank());
  std::vector<float> scatter_in(static_cast<size_t>(c.size()), value(c.rank())), scatter_out(1);
  {
    FaultScope fault(Fault::reduction_arrival_order);
    all_reduce_sum(c, cpu::default_backend(), &mutated, 1);
    reduce_scatter_sum(c, cpu::default_backend(), scatter_in.data(), scatter_out.data(), 1);
  }
  const auto all_mutated = c.all_gather(std::vector<float>{mutated, scatter_out[0]});
  EXPECT_EQ(bits(correct), bits(want));
  int differ = 0;
  for (int r = 0; r < c.size(); ++r) {
    differ += bits(all_mutated[static_cast<size_t>(2 * r)]) != bits(want);
    EXPECT_EQ(bits(all_mutated[static_cast<size_t>(2 * r)]), bits(all_mutated[static_cast<size_t>(2 * r + 1)]))
        << "all_reduce and reduce_scatter add in the same order on rank " << r;
  }
  EXPECT_EQ(want, 0.0f);
  EXPECT_EQ(bits(all_mutated[0]), bits(want)) << "rank 0 starts at rank 0: the mutant leaves it in rank order";
  EXPECT_EQ(all_mutated[static_cast<size_t>(2 * (c.size() - 1))], 3.0f * static_cast<float>(c.size() - 2));
  EXPECT_GT(differ, 0) << "the mutant was not visible on any rank";
}

TEST(MpiCommunicator, SplitOrdersByKey) {
  Communicator& c = world();
  // Two colours by parity; the key reverses the order inside each half.
  const auto sub = c.split(c.rank() % 2, -c.rank());
  const int members = (c.size() - c.rank() % 2 + 1) / 2;
  EXPECT_EQ(sub->size(), members);
  EXPECT_EQ(sub->rank(), members - 1 - c.rank() / 2);
  const auto ranks = sub->all_gather(std::vector<int>{c.rank()});
  for (int i = 0; i < sub->size(); ++i) EXPECT_EQ(ranks[static_cast<size_t>(i)], c.rank() % 2 + 2 * (members - 1 - i));
}

TEST(MpiCommunicator, NegativeSplitColourFailsOnEveryRank) {
  Communicator& c = world();
  RCTS_NEED_RANKS(c, 2);
  try {
    c.split(c.rank() == 1 ? -3 : 0, 0);
    ADD_FAILURE() << "expected an error on rank " << c.rank();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "mpi split: rank 1 passes colour -3 (colours must be >= 0)");
  }
}

}  // namespace
}  // namespace rcts
