// Ends a multi-rank job when one of its ranks is stopped (SIGSTOP, Ctrl-Z of that one
// process): the others would otherwise wait for it in a collective forever, since a
// stopped process is alive to MPI. A rank killed outright needs no watchdog: the MPI
// launcher sees it exit and ends the job.
//
// Each rank watches the ranks on its own host through /proc/<pid>/stat; when one has
// been stopped ('T') for kStoppedSeconds on end while this rank runs, it prints
// "rcts: rank R: rank S (pid P) has been stopped for N s ...: ending the job" and kills
// that process with SIGKILL, which the launcher then reports and turns into the end of
// the whole job. A rank traced by a debugger ('t') is left alone. Ranks on other hosts
// are covered only by the agreement's bounded waits (agreement.hpp).
#pragma once
#include <atomic>
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
  // `peers[r]`: world rank r's process; this rank's own entry is skipped.
  RankWatchdog(int rank, std::vector<Peer> peers);
  ~RankWatchdog();  // stops watching
  RankWatchdog(const RankWatchdog&) = delete;
  RankWatchdog& operator=(const RankWatchdog&) = delete;

  // This process's host name, as Peer::host holds it.
  static std::string this_host();
  // The state letter of /proc/<pid>/stat ('R', 'S', 'T', ...), or 0 when there is none.
  static char process_state(long pid);

 private:
  void watch();
  int rank_;
  std::vector<Peer> peers_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace rcts::harness
