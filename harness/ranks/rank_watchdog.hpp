// Ends a multi-rank job when one of its ranks is stopped (SIGSTOP, Ctrl-Z of that one
// process): the others would otherwise wait for it forever, in a collective, in
// MPI_Init or in MPI_Finalize, since a stopped process is alive to MPI. A rank killed
// outright needs no watchdog: the MPI launcher sees it exit and ends the job.
//
// main() starts one watchdog before MPI_Init and ends it after MPI_Finalize, so it
// covers the whole life of the process. It watches the other ranks of the same job on
// this host: the processes that share this one's parent (the launcher's daemon) and
// whose environment names the same job (PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid or
// PMI_KVSNAME), found again at every poll, so a rank is covered from its first moment;
// and the ranks the agreement's start records name (add_peers: a rank started through
// a wrapper script has another parent). State is read from /proc/<pid>/stat; when one
// has been stopped ('T') for kStoppedSeconds on end while this rank runs, it prints
// "rcts: rank R: rank S (pid P) has been stopped for N s ...: ending the job" and kills
// that process with SIGKILL, which the launcher then reports and turns into the end of
// the whole job. A rank traced by a debugger ('t') is left alone. Ranks on other hosts
// are covered only by the agreement's bounded waits (agreement.hpp).
#pragma once
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rcts::harness {

class RankWatchdog {
 public:
  static constexpr double kStoppedSeconds = 5;

  struct Peer {
    long pid = 0;
    std::string host;
  };
  // The process watchdog: this job's ranks on this host, found through the launcher
  // (see above), from now on. `process_watchdog()` returns it while it lives.
  RankWatchdog();
  // `peers[r]`: world rank r's process; this rank's own entry is skipped (no discovery).
  RankWatchdog(int rank, std::vector<Peer> peers);
  ~RankWatchdog();  // stops watching
  RankWatchdog(const RankWatchdog&) = delete;
  RankWatchdog& operator=(const RankWatchdog&) = delete;

  // The start records' pids, for ranks discovery cannot see; this host's only.
  void add_peers(const std::vector<Peer>& peers);
  static RankWatchdog* process_watchdog();

  // This process's host name, as Peer::host holds it.
  static std::string this_host();
  // The state letter of /proc/<pid>/stat ('R', 'S', 'T', ...), or 0 when there is none.
  static char process_state(long pid);
  // The job an MPI launcher started this process in (from its environment), or "".
  static std::string this_job();

 private:
  void watch();
  void discover();  // the launcher's other ranks of this job (watch thread only)
  int rank_;
  bool discover_ = false;
  std::string job_;
  std::mutex mutex_;
  std::map<long, int> peers_;   // pid -> world rank (-1: unknown)
  std::map<long, bool> seen_;   // pids discovery has judged: a rank of this job or not
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace rcts::harness
