#ifdef RCTS_HAVE_MPI
#include "reference/parallel/mpi_communicator.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <vector>

#include "reference/parallel/wait_deadline.hpp"

namespace rcts {

namespace {

std::string error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(len));
}

bool overlaps(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a);
  const auto pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + static_cast<uintptr_t>(b_bytes) &&
         pb < pa + static_cast<uintptr_t>(a_bytes);
}

}  // namespace

void mpi_check(int rc, const char* call, SourceLocation loc) {
  if (rc != MPI_SUCCESS) throw Error(std::string(call) + " failed: " + error_string(rc), loc);
}

// --- MpiSession -----------------------------------------------------------------------

bool MpiSession::active() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int init = 0, fin = 0;
  mpi_check(MPI_Initialized(&init), "MPI_Initialized");
  mpi_check(MPI_Finalized(&fin), "MPI_Finalized");
  RCTS_CHECK(!fin, "MpiSession: MPI was already finalised and cannot be initialised again");
  if (init) {
    mpi_check(MPI_Query_thread(&thread_level_), "MPI_Query_thread");
    return;
  }
  mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &thread_level_), "MPI_Init_thread");
  owns_ = true;
  if (thread_level_ < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    owns_ = false;
    throw Error("MPI_Init_thread: the MPI library provides thread level " + std::to_string(thread_level_) +
                ", rcts needs MPI_THREAD_FUNNELED (OpenMP threads run between MPI calls)");
  }
}

MpiSession::~MpiSession() {
  if (owns_ && active()) MPI_Finalize();
}

// --- MpiCommunicator ------------------------------------------------------------------

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  RCTS_CHECK(MpiSession::active(), "MpiCommunicator::world: MPI is not initialised (create an MpiSession first)");
  MPI_Comm dup = MPI_COMM_NULL;
  mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup(MPI_COMM_WORLD)");
  return std::make_unique<MpiCommunicator>(dup, true);
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  RCTS_CHECK(comm != MPI_COMM_NULL, "MpiCommunicator: MPI_COMM_NULL is not a communicator");
  mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  mpi_check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

MpiCommunicator::~MpiCommunicator() {
  if (owned_ && comm_ != MPI_COMM_NULL && MpiSession::active()) MPI_Comm_free(&comm_);
}

void MpiCommunicator::check(int rc, const char* call, SourceLocation loc) const {
  if (rc != MPI_SUCCESS)
    throw Error(std::string(call) + " failed on rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                    ": " + error_string(rc),
                loc);
}

void MpiCommunicator::complete(MPI_Request* reqs, int n, MPI_Status* statuses, const char* call,
                               const std::string& peer) const {
  const WaitDeadline* d = current_wait_deadline();
  if (!d) {
    check(MPI_Waitall(n, reqs, statuses ? statuses : MPI_STATUSES_IGNORE), call);
    return;
  }
  // Polled, so that the deadline can end a wait that would never complete. The first
  // tests spin (a pipeline's messages are often there already), then pauses grow to 1 ms.
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    int done = 0;
    check(MPI_Testall(n, reqs, &done, statuses ? statuses : MPI_STATUSES_IGNORE), call);
    if (done) return;
    if (std::chrono::steady_clock::now() > d->at) {
      int world_rank = rank_;  // this communicator may be a group's: name the rank of the job
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
      wait_deadline_passed(*d, world_rank, std::string(call) + peer);
    }
    if (pause.count() == 0) {
      std::this_thread::yield();
      pause = std::chrono::microseconds(1);
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }
}

void MpiCommunicator::all_gather(const void* send, void* recv, int64_t bytes) {
  // Every rank sees every rank's byte count, so all of them agree on any error.
  std::vector<int64_t> counts(static_cast<size_t>(size_));
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Iallgather(&bytes, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm_, &req), "MPI_Iallgather");
  complete(&req, 1, nullptr, "MPI_Allgather(byte counts)");
  for (int r = 0; r < size_; ++r) {
    const int64_t c = counts[static_cast<size_t>(r)];
    RCTS_CHECK(c == counts[0], "mpi all_gather: rank " + std::to_string(r) + " passes " + std::to_string(c) +
                                   " bytes but rank 0 passes " + std::to_string(counts[0]));
  }
  RCTS_CHECK(bytes >= 0, "mpi all_gather: negative byte count " + std::to_string(bytes));
  RCTS_CHECK(bytes <= INT_MAX, "mpi all_gather: " + std::to_string(bytes) + " bytes per rank exceed INT_MAX");
  if (bytes == 0) return;
  auto* out = static_cast<char*>(recv);
  const int n = static_cast<int>(bytes);
  if (send == out + static_cast<int64_t>(rank_) * bytes) {
    check(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_BYTE, out, n, MPI_BYTE, comm_, &req), "MPI_Iallgather");
    complete(&req, 1, nullptr, "MPI_Allgather");
  } else if (overlaps(send, bytes, recv, bytes * size_)) {
    const std::vector<char> copy(static_cast<const char*>(send), static_cast<const char*>(send) + bytes);
    check(MPI_Iallgather(copy.data(), n, MPI_BYTE, out, n, MPI_BYTE, comm_, &req), "MPI_Iallgather");
    complete(&req, 1, nullptr, "MPI_Allgather");
  } else {
    check(MPI_Iallgather(send, n, MPI_BYTE, out, n, MPI_BYTE, comm_, &req), "MPI_Iallgather");
    complete(&req, 1, nullptr, "MPI_Allgather");
  }
}

void MpiCommunicator::all_to_allv(const void* send, const int64_t* send_bytes, void* recv,
                                  const int64_t* recv_bytes) {
  // Row p of the gathered table: rank p's send_bytes then its recv_bytes.
  const auto w = static_cast<size_t>(size_);
  std::vector<int64_t> mine(2 * w);
  std::memcpy(mine.data(), send_bytes, w * sizeof(int64_t));
  std::memcpy(mine.data() + w, recv_bytes, w * sizeof(int64_t));
  std::vector<int64_t> table(2 * w * w);
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Iallgather(mine.data(), static_cast<int>(2 * w), MPI_INT64_T, table.data(), static_cast<int>(2 * w),
                       MPI_INT64_T, comm_, &req),
        "MPI_Iallgather");
  complete(&req, 1, nullptr, "MPI_Allgather(byte counts)");
  const auto sent = [&](size_t p, size_t q) { return table[p * 2 * w + q]; };        // p -> q
  const auto expected = [&](size_t p, size_t q) { return table[p * 2 * w + w + q]; };  // p <- q
  for (size_t p = 0; p < w; ++p) {
    int64_t send_total = 0, recv_total = 0;
    for (size_t q = 0; q < w; ++q) {
      RCTS_CHECK(sent(p, q) >= 0 && expected(p, q) >= 0,
                 "mpi all_to_allv: rank " + std::to_string(p) + " passes a negative byte count for rank " +
                     std::to_string(q));
      RCTS_CHECK(sent(p, q) == expected(q, p), "mpi all_to_allv: rank " + std::to_string(p) + " sends " +
                                                   std::to_string(sent(p, q)) + " bytes to rank " + std::to_string(q) +
                                                   ", which expects " + std::to_string(expected(q, p)));
      send_total += sent(p, q);
      recv_total += expected(p, q);
      RCTS_CHECK(send_total <= INT_MAX && recv_total <= INT_MAX,
                 "mpi all_to_allv: rank " + std::to_string(p) + " moves more than INT_MAX bytes");
    }
  }
  std::vector<int> scount(w), sdispl(w), rcount(w), rdispl(w);
  int64_t s_off = 0, r_off = 0;
  for (size_t q = 0; q < w; ++q) {
    scount[q] = static_cast<int>(send_bytes[q]);
    rcount[q] = static_cast<int>(recv_bytes[q]);
    sdispl[q] = static_cast<int>(s_off);
    rdispl[q] = static_cast<int>(r_off);
    s_off += send_bytes[q];
    r_off += recv_bytes[q];
  }
  std::vector<char> copy;
  if (overlaps(send, s_off, recv, r_off)) {
    copy.assign(static_cast<const char*>(send), static_cast<const char*>(send) + s_off);
    send = copy.data();
  }
  check(MPI_Ialltoallv(send, scount.data(), sdispl.data(), MPI_BYTE, recv, rcount.data(), rdispl.data(), MPI_BYTE,
                       comm_, &req),
        "MPI_Ialltoallv");
  complete(&req, 1, nullptr, "MPI_Alltoallv");
}

void MpiCommunicator::broadcast(void* data, int64_t bytes, int root) {
  const int64_t mine[2] = {bytes, root};
  std::vector<int64_t> all(2 * static_cast<size_t>(size_));
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Iallgather(mine, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, comm_, &req), "MPI_Iallgather");
  complete(&req, 1, nullptr, "MPI_Allgather(broadcast arguments)");
  for (int r = 0; r < size_; ++r) {
    const int64_t b = all[2 * static_cast<size_t>(r)], ro = all[2 * static_cast<size_t>(r) + 1];
    RCTS_CHECK(ro == all[1], "mpi broadcast: rank " + std::to_string(r) + " names root " + std::to_string(ro) +
                                 " but rank 0 names root " + std::to_string(all[1]));
    RCTS_CHECK(b == all[0], "mpi broadcast: rank " + std::to_string(r) + " passes " + std::to_string(b) +
                                " bytes but rank 0 passes " + std::to_string(all[0]));
  }
  RCTS_CHECK(root >= 0 && root < size_,
             "mpi broadcast: root " + std::to_string(root) + " is not a rank of " + std::to_string(size_));
  RCTS_CHECK(bytes >= 0 && bytes <= INT_MAX,
             "mpi broadcast: byte count " + std::to_string(bytes) + " is negative or exceeds INT_MAX");
  if (bytes == 0) return;
  check(MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_, &req), "MPI_Ibcast");
  complete(&req, 1, nullptr, "MPI_Bcast", " (root " + std::to_string(root) + ")");
}

// --- point to point -------------------------------------------------------------------

namespace {
constexpr int kPointToPointTag = 0x5050;  // pipeline activations and gradients
}  // namespace

void MpiCommunicator::check_peer(int peer, int64_t bytes, const char* what) const {
  RCTS_CHECK(peer >= 0 && peer < size_ && peer != rank_, std::string("mpi ") + what + ": peer " + std::to_string(peer) +
                                                           " is not another rank of " + std::to_string(size_) +
                                                           " (this is rank " + std::to_string(rank_) + ")");
  RCTS_CHECK(bytes >= 0 && bytes <= INT_MAX, std::string("mpi ") + what + ": byte count " + std::to_string(bytes) +
                                                 " is negative or exceeds INT_MAX");
}

void MpiCommunicator::send(const void* data, int64_t bytes, int dest) {
  check_peer(dest, bytes, "send");
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, dest, kPointToPointTag, comm_, &req), "MPI_Isend");
  complete(&req, 1, nullptr, "MPI_Send", " to rank " + std::to_string(dest));
}

void MpiCommunicator::recv(void* data, int64_t bytes, int src) {
  check_peer(src, bytes, "recv");
  MPI_Status st;
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, src, kPointToPointTag, comm_, &req), "MPI_Irecv");
  complete(&req, 1, &st, "MPI_Recv", " from rank " + std::to_string(src));
  int got = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &got), "MPI_Get_count");
  RCTS_CHECK(got == bytes, "mpi recv: rank " + std::to_string(src) + " sent " + std::to_string(got) +
                               " bytes, rank " + std::to_string(rank_) + " expected " + std::to_string(bytes));
}

void MpiCommunicator::send_recv(const void* send, int64_t send_bytes, int dest, void* recv, int64_t recv_bytes,
                                int src) {
  check_peer(dest, send_bytes, "send_recv");
  check_peer(src, recv_bytes, "send_recv");
  MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Status sts[2];
  check(MPI_Irecv(recv, static_cast<int>(recv_bytes), MPI_BYTE, src, kPointToPointTag, comm_, &reqs[0]), "MPI_Irecv");
  check(MPI_Isend(send, static_cast<int>(send_bytes), MPI_BYTE, dest, kPointToPointTag, comm_, &reqs[1]), "MPI_Isend");
  complete(reqs, 2, sts, "MPI_Sendrecv",
           " (to rank " + std::to_string(dest) + ", from rank " + std::to_string(src) + ")");
  const MPI_Status& st = sts[0];
  int got = 0;
  check(MPI_Get_count(&st, MPI_BYTE, &got), "MPI_Get_count");
  RCTS_CHECK(got == recv_bytes, "mpi send_recv: rank " + std::to_string(src) + " sent " + std::to_string(got) +
                                    " bytes, rank " + std::to_string(rank_) + " expected " + std::to_string(recv_bytes));
}

void MpiCommunicator::barrier() {
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
  complete(&req, 1, nullptr, "MPI_Barrier");
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  const int mine[2] = {color, key};
  std::vector<int> all(2 * static_cast<size_t>(size_));
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Iallgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm_, &req), "MPI_Iallgather");
  complete(&req, 1, nullptr, "MPI_Allgather(split arguments)");
  for (int r = 0; r < size_; ++r)
    RCTS_CHECK(all[2 * static_cast<size_t>(r)] >= 0, "mpi split: rank " + std::to_string(r) + " passes colour " +
                                                         std::to_string(all[2 * static_cast<size_t>(r)]) +
                                                         " (colours must be >= 0)");
  MPI_Comm sub = MPI_COMM_NULL;
  check(MPI_Comm_split(comm_, color, key, &sub), "MPI_Comm_split");
  return std::make_unique<MpiCommunicator>(sub, true);
}

}  // namespace rcts
#endif  // RCTS_HAVE_MPI
