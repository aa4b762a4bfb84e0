// The deadline of a case's communication. A case whose ranks wait for each other in a
// way that never completes (a pipeline schedule that expects one more forward, a
// neighbour that is never sent to) would spin forever; the harness therefore sets, for
// the life of each multi-rank case, a point in time by which every wait of the MPI
// communicator (and of the ranks' agreement) must have completed. A wait still open at
// the deadline prints
//   rcts: rank R: case C: still waiting in OPERATION N s after the case started ...
// then gives the other ranks, whose waits expire at about the same moment (they
// started the case together), kGraceSeconds to print theirs, and aborts the job.
// Without a deadline (outside a case, single-rank runs) waits are unbounded as MPI's are.
#pragma once
#include <chrono>
#include <string>

namespace rcts {

struct WaitDeadline {
  std::chrono::steady_clock::time_point at;
  std::chrono::steady_clock::time_point started;
  std::string what;       // "case selective.core_attn.tp2"
  std::string limit_from; // "RCTS_CASE_TIMEOUT = 300 s"
};

// Sets the deadline for its lifetime (one at a time; the previous one comes back after).
class WaitDeadlineScope {
 public:
  WaitDeadlineScope(double seconds, std::string what, std::string limit_from);
  ~WaitDeadlineScope();
  WaitDeadlineScope(const WaitDeadlineScope&) = delete;
  WaitDeadlineScope& operator=(const WaitDeadlineScope&) = delete;

 private:
  const WaitDeadline* previous_;
  WaitDeadline mine_;
};

inline constexpr double kGraceSeconds = 2;

// The deadline now in force, or null.
const WaitDeadline* current_wait_deadline();

// Prints the message above for `rank` waiting in `operation`, waits kGraceSeconds and
// aborts the job (MPI_Abort when MPI is active, else _Exit(2)).
[[noreturn]] void wait_deadline_passed(const WaitDeadline& d, int rank, const std::string& operation);

}  // namespace rcts
