// Agreement between the ranks of a multi-rank run (mpirun), so that an error on one
// rank can never leave the others waiting forever in a collective.
//
// At fixed points every rank exchanges a small JSON record with every other rank, on a
// communicator of its own (so these exchanges never match the runner's collectives):
//   start        the command and the rcts build each rank runs (its version, commit and
//                the sha256 of its executable, so two builds of one commit differ too)
//   load         whether each rank loaded its cases (else its error)
//   case list    the ids each rank selected
//   before case  the case (a sha256 of its parsed file) and its resolved configs, or
//                the error resolving them
//   after case   each rank's result of the case
//   exit         each rank's exit status
// Where ranks differ or one failed, every rank reaches the same verdict from the same
// records: the case (or the whole run) fails on every rank with the failing rank's
// message, and every rank exits non-zero.
//
// Every wait is bounded. Within a case, every wait of its communication and of these
// exchanges ends at the case's deadline, RCTS_CASE_TIMEOUT seconds (default 300) after
// the case started (reference/parallel/wait_deadline.hpp). A rank waits RCTS_MPI_TIMEOUT seconds (default 300) for the
// others at each point; a rank whose case just threw waits only RCTS_MPI_ERROR_TIMEOUT
// seconds (default 10), because the others may be blocked in a collective that needs
// it. When a wait expires, or the ranks turn out to be at different points (only an
// error on one of them can cause that), the rank prints why and aborts the job
// (MPI_Abort): a loud failure, never a hang.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/results/result.hpp"
#include "reference/core/error.hpp"
#include "reference/parallel/communicator.hpp"

namespace rcts::harness {

class RankWatchdog;

// An error every rank raises with the same message at the same point (from the same
// exchanged records): rank 0 alone prints it and no rank needs to abort.
class AgreedError : public Error {
 public:
  explicit AgreedError(const std::string& what, SourceLocation loc = SourceLocation::current()) : Error(what, loc) {}
};

class RankAgreement {
 public:
  enum class Wait { normal, after_error };

  // Collective over `world`: duplicates its MPI communicator. Reads RCTS_MPI_TIMEOUT
  // and RCTS_MPI_ERROR_TIMEOUT; a bad value is reported by agree_on_start().
  explicit RankAgreement(Communicator& world);
  ~RankAgreement();
  RankAgreement(const RankAgreement&) = delete;
  RankAgreement& operator=(const RankAgreement&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's record, in rank order. `mine` gets "at": point. Aborts the job when
  // the wait expires or another rank is at a different point; `mine["error"]`, when
  // present, is printed first.
  std::vector<nlohmann::json> exchange(const std::string& point, nlohmann::json mine, Wait wait = Wait::normal);

  // Prints "rcts: rank R: <why>" and aborts the whole job.
  [[noreturn]] void abort_job(const std::string& why) const;

  const std::string& setup_error() const { return setup_error_; }
  // RCTS_CASE_TIMEOUT (default 300 s): how long a case may take before a wait of its
  // communication that is still open ends the job (reference/parallel/wait_deadline.hpp).
  double case_timeout_s() const { return case_timeout_s_; }

  // The start records (pid and host of every rank) go to the process watchdog main()
  // started (rank_watchdog.hpp), else to one of the agreement's own, which watches until
  // the exit exchange: a rank of this host that is stopped ends the job.
  void start_watchdog(const std::vector<nlohmann::json>& start_records);
  void stop_watchdog();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Communicator* world_;
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 300, error_timeout_s_ = 10, case_timeout_s_ = 300;
  std::string setup_error_;
  std::unique_ptr<RankWatchdog> watchdog_;
};

// What a rank says of itself at start: command, build ("version (commit)"), executable
// (the sha256 of /proc/self/exe, "unreadable" when it cannot be read), pid and host.
nlohmann::json start_record(const std::string& command);
std::string executable_sha256();

// --- the points, for the runner and the CLI (no-ops with one rank) -------------------
// Each throws AgreedError on every rank when the ranks differ or one failed.
void agree_on_start(RankAgreement& a, const std::string& command);
// `error`: this rank's error loading its cases (empty when it loaded them).
void agree_on_load(RankAgreement& a, const std::string& error);
// At exit: the highest status of every rank. `failed_here`: this rank's status comes
// from an error (`error`) the others may not know about (they may be stuck waiting for it).
int agree_on_exit(RankAgreement& a, int status, bool failed_here, const std::string& error = "");

// --- verdicts from the exchanged records (pure; every rank computes the same) --------
std::optional<std::string> start_verdict(const std::vector<nlohmann::json>& per_rank);
std::optional<std::string> load_verdict(const std::vector<nlohmann::json>& per_rank);
std::optional<std::string> case_list_verdict(const std::vector<nlohmann::json>& per_rank);
std::optional<std::string> case_verdict(const std::vector<nlohmann::json>& per_rank);

}  // namespace rcts::harness
