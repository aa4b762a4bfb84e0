// GoogleTest main for tests that run under mpiexec. Every rank runs every test; rank 0
// prints GoogleTest's normal output, the other ranks print only their failures,
// tagged with the rank. At the end the failed test names of every rank are gathered
// (with plain MPI, not the code under test), rank 0 prints a per-rank summary, and
// every rank returns the same status. A test must not exit(): the other ranks would
// wait for it forever.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "reference/parallel/mpi_communicator.hpp"
#include "tests/mpi/mpi_env.hpp"

namespace rcts::mpi_test {

namespace {
Communicator* g_world = nullptr;

// Prints failed assertions of one rank as "[rank r] file:line: message".
class RankFailurePrinter final : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::cout << "[rank " << rank_ << "] " << (r.file_name() ? r.file_name() : "?") << ":" << r.line_number() << ": "
              << r.summary() << std::endl;
  }

 private:
  int rank_;
};

// Collects the full names of the tests that failed on this rank.
class FailureCollector final : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& t) override {
    if (t.result()->Failed()) failed += std::string(t.test_suite_name()) + "." + t.name() + "\n";
  }
  std::string failed;
};

// Every rank's string, in rank order.
std::vector<std::string> gather_strings(const std::string& mine, int size) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
  mpi_check(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size; ++r) displs[static_cast<size_t>(r)] = total, total += lens[static_cast<size_t>(r)];
  std::string all(static_cast<size_t>(total), '\0');
  mpi_check(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                           MPI_COMM_WORLD),
            "MPI_Allgatherv");
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r)
    out.push_back(all.substr(static_cast<size_t>(displs[static_cast<size_t>(r)]),
                             static_cast<size_t>(lens[static_cast<size_t>(r)])));
  return out;
}

int run(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  testing::InitGoogleTest(&argc, argv);
  auto world = MpiCommunicator::world();
  g_world = world.get();
  const int rank = world->rank(), size = world->size();

  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  auto* collector = new FailureCollector;  // owned by the listener list
  listeners.Append(collector);

  const int local = RUN_ALL_TESTS();
  const std::string failed = collector->failed.empty() && local != 0 ? "(run failed)\n" : collector->failed;
  const auto per_rank = gather_strings(failed, size);
  bool any = false;
  for (const auto& f : per_rank) any = any || !f.empty();
  if (rank == 0) {
    std::cout << "[mpi] " << size << " ranks: " << (any ? "FAILED" : "all ranks passed") << std::endl;
    for (int r = 0; r < size; ++r)
      if (!per_rank[static_cast<size_t>(r)].empty()) {
        std::cout << "[mpi] rank " << r << " failed:\n";
        std::string line;
        for (char c : per_rank[static_cast<size_t>(r)])
          if (c == '\n') std::cout << "[mpi]   " << line << "\n", line.clear();
          else line += c;
      }
    std::cout.flush();
  }
  g_world = nullptr;
  world.reset();  // frees the communicator before MPI_Finalize
  return any ? 1 : 0;
}

}  // namespace

Communicator& world() {
  RCTS_CHECK(g_world != nullptr, "mpi_test::world() used outside the MPI main");
  return *g_world;
}

}  // namespace rcts::mpi_test

int main(int argc, char** argv) {
  try {
    return rcts::mpi_test::run(argc, argv);
  } catch (const std::exception& e) {
    // Outside any test: the other ranks cannot be told, so take the whole job down.
    std::cerr << "rcts mpi test main: " << e.what() << std::endl;
    if (rcts::MpiSession::active()) MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
  }
}
