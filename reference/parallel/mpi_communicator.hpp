// MPI backend of the Communicator interface (design §8), for CPU runs under mpirun.
// Built only when CMake found MPI (RCTS_HAVE_MPI); without it this header declares
// nothing. Every MPI call returns its status (MPI_ERRORS_RETURN on the wrapped
// communicator) and a failure becomes rcts::Error naming the call and the rank.
//
// Argument checks that could differ between ranks (byte counts, roots, split colours)
// are made on gathered metadata, so every rank reaches the same verdict and throws
// the same error instead of one rank throwing while the others wait in a collective.
#pragma once
#ifdef RCTS_HAVE_MPI

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <memory>
#include <string>

#include "reference/parallel/communicator.hpp"

namespace rcts {

// Throws rcts::Error("<call> failed ...: <MPI error string>") unless rc == MPI_SUCCESS.
void mpi_check(int rc, const char* call, SourceLocation loc = SourceLocation::current());

// MPI_Init_thread (MPI_THREAD_FUNNELED: OpenMP threads inside kernels never call MPI)
// and MPI_Finalize as RAII. Idempotent: when MPI is already initialised the session
// only queries it, and only the session that initialised MPI finalises it.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  MpiSession() : MpiSession(nullptr, nullptr) {}
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  bool owns() const { return owns_; }
  int thread_level() const { return thread_level_; }
  // MPI_Init has run and MPI_Finalize has not.
  static bool active();

 private:
  bool owns_ = false;
  int thread_level_ = MPI_THREAD_SINGLE;
};

class MpiCommunicator final : public Communicator {
 public:
  using Communicator::all_gather;
  // A private duplicate of MPI_COMM_WORLD, so rcts traffic never matches a caller's
  // messages. Requires an active MpiSession.
  static std::unique_ptr<MpiCommunicator> world();
  // Wraps `comm` and sets MPI_ERRORS_RETURN on it. When `owned`, the destructor frees
  // it (unless MPI is already finalised).
  MpiCommunicator(MPI_Comm comm, bool owned);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  MPI_Comm comm() const { return comm_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  void all_gather(const void* send, void* recv, int64_t bytes) override;
  void all_to_allv(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) override;
  void broadcast(void* data, int64_t bytes, int root) override;
  void barrier() override;
  // MPI_Comm_split; the new communicator is owned by the returned object.
  std::unique_ptr<Communicator> split(int color, int key) override;
  // MPI_Send / MPI_Recv / MPI_Sendrecv of bytes under one tag reserved for them.
  void send(const void* data, int64_t bytes, int dest) override;
  void recv(void* data, int64_t bytes, int src) override;
  void send_recv(const void* send, int64_t send_bytes, int dest, void* recv, int64_t recv_bytes, int src) override;

 private:
  void check_peer(int peer, int64_t bytes, const char* what) const;
  void check(int rc, const char* call, SourceLocation loc = SourceLocation::current()) const;
  // Waits for `n` requests; under a WaitDeadline (wait_deadline.hpp) a wait still open at
  // the deadline ends the job naming `call` and `peer` (" from rank 1").
  void complete(MPI_Request* reqs, int n, MPI_Status* statuses, const char* call, const std::string& peer = "") const;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace rcts

#endif  // RCTS_HAVE_MPI
