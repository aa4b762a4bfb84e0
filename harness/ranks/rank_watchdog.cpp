// RankWatchdog: polls the other ranks of this host twice a second.
#include "harness/ranks/rank_watchdog.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace rcts::harness {

namespace {

RankWatchdog* g_process_watchdog = nullptr;

constexpr const char* kJobVariables[] = {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_KVSNAME"};
constexpr const char* kRankVariables[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// NAME=value pairs of /proc/<pid>/environ.
std::map<std::string, std::string> environment_of(long pid) {
  std::map<std::string, std::string> env;
  const std::string text = read_all("/proc/" + std::to_string(pid) + "/environ");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    const std::string entry = text.substr(start, end - start);
    if (const size_t eq = entry.find('='); eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
    start = end + 1;
  }
  return env;
}

// The children of process `parent` (of every thread: the launcher may fork from any).
std::vector<long> children_of(long parent) {
  std::vector<long> out;
  const std::string task_dir = "/proc/" + std::to_string(parent) + "/task";
  if (DIR* d = ::opendir(task_dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::istringstream in(read_all(task_dir + "/" + e->d_name + "/children"));
      for (long pid = 0; in >> pid;) out.push_back(pid);
    }
    ::closedir(d);
  }
  return out;
}

int rank_of(const std::map<std::string, std::string>& env) {
  for (const char* v : kRankVariables)
    if (auto it = env.find(v); it != env.end()) return std::atoi(it->second.c_str());
  return -1;
}

}  // namespace

std::string RankWatchdog::this_host() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

std::string RankWatchdog::this_job() {
  for (const char* v : kJobVariables)
    if (const char* s = std::getenv(v); s && *s) return std::string(v) + "=" + s;
  return {};
}

char RankWatchdog::process_state(long pid) {
  const std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');  // the command name may hold spaces and ')'
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

RankWatchdog* RankWatchdog::process_watchdog() { return g_process_watchdog; }

RankWatchdog::RankWatchdog() : rank_(-1), discover_(true), job_(this_job()) {
  for (const char* v : kRankVariables)
    if (const char* s = std::getenv(v); s && *s) {
      rank_ = std::atoi(s);
      break;
    }
  if (job_.empty()) return;  // no launcher to ask: the start records will name the peers
  g_process_watchdog = this;
  thread_ = std::thread([this] { watch(); });
}

RankWatchdog::RankWatchdog(int rank, std::vector<Peer> peers) : rank_(rank) {
  add_peers(peers);
  if (!peers_.empty()) thread_ = std::thread([this] { watch(); });
}

void RankWatchdog::add_peers(const std::vector<Peer>& peers) {
  const std::string here = this_host();
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t r = 0; r < peers.size(); ++r)
    if (static_cast<int>(r) != rank_ && peers[r].host == here && peers[r].pid > 0 && peers[r].pid != ::getpid())
      peers_[peers[r].pid] = static_cast<int>(r);
}

RankWatchdog::~RankWatchdog() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (g_process_watchdog == this) g_process_watchdog = nullptr;
}

void RankWatchdog::discover() {
  const long self = ::getpid();
  for (long pid : children_of(static_cast<long>(::getppid()))) {
    if (pid == self || seen_.count(pid)) continue;
    const auto env = environment_of(pid);
    if (env.empty()) continue;  // not readable yet (just forked): ask again next poll
    bool same_job = false;
    for (const char* v : kJobVariables)
      if (auto it = env.find(v); it != env.end()) {
        same_job = job_ == std::string(v) + "=" + it->second;
        break;
      }
    seen_[pid] = same_job;
    if (same_job) {
      std::lock_guard<std::mutex> lock(mutex_);
      peers_[pid] = rank_of(env);
    }
  }
}

void RankWatchdog::watch() {
  using clock = std::chrono::steady_clock;
  constexpr auto kPoll = std::chrono::milliseconds(500);
  std::map<long, int> stopped_polls;
  const int limit = static_cast<int>(kStoppedSeconds * 1000 / 500);
  while (!stop_) {
    const auto next = clock::now() + kPoll;
    if (discover_) discover();
    std::map<long, int> peers;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      peers = peers_;
    }
    for (const auto& [pid, rank] : peers) {
      if (stop_) break;
      const char state = process_state(pid);
      int& polls = stopped_polls[pid];
      polls = state == 'T' ? polls + 1 : 0;
      if (polls < limit) continue;
      std::ostringstream msg;
      msg << "rcts: rank " << rank_ << ": rank " << (rank >= 0 ? std::to_string(rank) : std::string("?")) << " (pid "
          << pid << ") has been stopped for " << kStoppedSeconds
          << " s (SIGSTOP?); the other ranks would wait for it forever: ending the job\n";
      std::cerr << msg.str() << std::flush;
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      polls = 0;
    }
    while (!stop_ && clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace rcts::harness
