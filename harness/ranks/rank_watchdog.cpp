// RankWatchdog: polls the other ranks of this host twice a second.
#include "harness/ranks/rank_watchdog.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace rcts::harness {

std::string RankWatchdog::this_host() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

char RankWatchdog::process_state(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');  // the command name may hold spaces and ')'
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

RankWatchdog::RankWatchdog(int rank, std::vector<Peer> peers) : rank_(rank), peers_(std::move(peers)) {
  const std::string here = this_host();
  bool any = false;
  for (size_t r = 0; r < peers_.size(); ++r)
    if (static_cast<int>(r) != rank_ && peers_[r].host == here && peers_[r].pid > 0) any = true;
  if (any) thread_ = std::thread([this] { watch(); });
}

RankWatchdog::~RankWatchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void RankWatchdog::watch() {
  using clock = std::chrono::steady_clock;
  constexpr auto kPoll = std::chrono::milliseconds(500);
  const std::string here = this_host();
  std::vector<int> stopped_polls(peers_.size(), 0);
  const int limit = static_cast<int>(kStoppedSeconds * 1000 / 500);
  while (!stop_) {
    const auto next = clock::now() + kPoll;
    for (size_t r = 0; r < peers_.size() && !stop_; ++r) {
      if (static_cast<int>(r) == rank_ || peers_[r].host != here || peers_[r].pid <= 0) continue;
      stopped_polls[r] = process_state(peers_[r].pid) == 'T' ? stopped_polls[r] + 1 : 0;
      if (stopped_polls[r] < limit) continue;
      std::ostringstream msg;
      msg << "rcts: rank " << rank_ << ": rank " << r << " (pid " << peers_[r].pid << ") has been stopped for "
          << kStoppedSeconds << " s (SIGSTOP?); the other ranks would wait for it forever: ending the job\n";
      std::cerr << msg.str() << std::flush;
      ::kill(static_cast<pid_t>(peers_[r].pid), SIGKILL);
      stopped_polls[r] = 0;
    }
    while (!stop_ && clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace rcts::harness
