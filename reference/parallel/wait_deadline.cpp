// WaitDeadline: one process-wide deadline (only the main thread calls MPI).
#include "reference/parallel/wait_deadline.hpp"

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>

#ifdef RCTS_HAVE_MPI
#include "reference/parallel/mpi_communicator.hpp"
#endif

namespace rcts {

namespace {
const WaitDeadline* g_deadline = nullptr;
}  // namespace

WaitDeadlineScope::WaitDeadlineScope(double seconds, std::string what, std::string limit_from) : previous_(g_deadline) {
  mine_.started = std::chrono::steady_clock::now();
  mine_.at = mine_.started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(seconds));
  mine_.what = std::move(what);
  mine_.limit_from = std::move(limit_from);
  g_deadline = &mine_;
}

WaitDeadlineScope::~WaitDeadlineScope() { g_deadline = previous_; }

const WaitDeadline* current_wait_deadline() { return g_deadline; }

void wait_deadline_passed(const WaitDeadline& d, int rank, const std::string& operation) {
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - d.started).count();
  std::ostringstream msg;
  msg.precision(3);
  msg << "rcts: rank " << rank << ": " << d.what << ": still waiting in " << operation << " " << waited
      << " s after the case started (" << d.limit_from
      << "): its communication is deadlocked, or far slower than the limit allows; ending the job\n";
  std::cerr << msg.str() << std::flush;
  std::this_thread::sleep_for(std::chrono::duration<double>(kGraceSeconds));
#ifdef RCTS_HAVE_MPI
  if (MpiSession::active()) MPI_Abort(MPI_COMM_WORLD, 2);
#endif
  std::_Exit(2);
}

}  // namespace rcts
