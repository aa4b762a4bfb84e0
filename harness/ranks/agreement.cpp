// RankAgreement: timed exchanges on a private MPI communicator, and the verdicts.
#include "harness/ranks/agreement.hpp"
#include "harness/io/text_safety.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <fstream>

#include "harness/io/digest.hpp"
#include "harness/io/gather.hpp"
#include "harness/io/version.hpp"
#include "harness/ranks/rank_watchdog.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/faults.hpp"
#include "reference/parallel/wait_deadline.hpp"
#ifdef RCTS_HAVE_MPI
#include "reference/parallel/mpi_communicator.hpp"
#endif

namespace rcts::harness {

namespace {

// Seconds from an environment variable; `error` says what is wrong with its value.
double seconds_from_env(const char* name, double fallback, std::string& error) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0)) {
    error += std::string(error.empty() ? "" : "; ") + name + " = '" + v + "': expected a number of seconds > 0";
    return fallback;
  }
  return s;
}

// "rank r: <error>" for each rank whose record carries an error, one per line.
std::optional<std::string> errors_of(const std::vector<nlohmann::json>& per_rank) {
  std::string out;
  for (size_t r = 0; r < per_rank.size(); ++r)
    if (per_rank[r].contains("error")) {
      if (!out.empty()) out += '\n';
      out.append("rank ").append(std::to_string(r)).append(": ").append(per_rank[r]["error"].get<std::string>());
    }
  if (out.empty()) return std::nullopt;
  return out;
}

std::string seconds_str(double s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

std::string short_value(const nlohmann::json* v) {
  if (!v) return "absent";
  std::string s = v->dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

}  // namespace

// --- RankAgreement -------------------------------------------------------------------

struct RankAgreement::Impl {
#ifdef RCTS_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;
#endif
};

RankAgreement::RankAgreement(Communicator& world) : impl_(std::make_unique<Impl>()), world_(&world) {
  rank_ = world.rank();
  size_ = world.size();
  timeout_s_ = seconds_from_env("RCTS_MPI_TIMEOUT", 300, setup_error_);
  error_timeout_s_ = seconds_from_env("RCTS_MPI_ERROR_TIMEOUT", 10, setup_error_);
  case_timeout_s_ = seconds_from_env("RCTS_CASE_TIMEOUT", 300, setup_error_);
#ifdef RCTS_HAVE_MPI
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&world)) {
    mpi_check(MPI_Comm_dup(mpi->comm(), &impl_->comm), "MPI_Comm_dup (rank agreement)");
    mpi_check(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  }
#endif
}

void RankAgreement::start_watchdog(const std::vector<nlohmann::json>& start_records) {
  std::vector<RankWatchdog::Peer> peers;
  for (const auto& r : start_records)
    peers.push_back({r.value("pid", 0L), r.value("host", std::string())});
  if (RankWatchdog* process = RankWatchdog::process_watchdog())
    process->add_peers(peers);  // it watches until after MPI_Finalize
  else
    watchdog_ = std::make_unique<RankWatchdog>(rank_, std::move(peers));
}

void RankAgreement::stop_watchdog() { watchdog_.reset(); }

RankAgreement::~RankAgreement() {
  watchdog_.reset();
#ifdef RCTS_HAVE_MPI
  if (impl_->comm != MPI_COMM_NULL && MpiSession::active()) MPI_Comm_free(&impl_->comm);
#endif
}

void RankAgreement::abort_job(const std::string& why) const {
  std::cerr << "rcts: rank " << rank_ << ": " << why << std::endl;
#ifdef RCTS_HAVE_MPI
  if (MpiSession::active()) MPI_Abort(MPI_COMM_WORLD, 2);
#endif
  std::_Exit(2);
}

std::vector<nlohmann::json> RankAgreement::exchange(const std::string& point, nlohmann::json mine, Wait wait) {
  mine["at"] = point;
  const std::string text = json_text(mine);
  std::vector<std::string> texts;
  if (size_ == 1) {
    texts.push_back(text);
  }
#ifdef RCTS_HAVE_MPI
  else if (impl_->comm != MPI_COMM_NULL) {
    const double limit = wait == Wait::after_error ? error_timeout_s_ : timeout_s_;
    const std::string own_error = mine.contains("error") ? mine["error"].get<std::string>() + "\n" : "";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit);
    // Polls a non-blocking collective until it completes or the deadline passes.
    auto finish = [&](MPI_Request& req) {
      auto pause = std::chrono::microseconds(20);
      for (;;) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
          abort_job(own_error + "MPI_Test failed at '" + point + "': aborting the job");
        if (done) return;
        const WaitDeadline* in_case = current_wait_deadline();  // a case's deadline bounds its agreements too
        if (in_case && std::chrono::steady_clock::now() > in_case->at && in_case->at < deadline)
          wait_deadline_passed(*in_case, rank_, "the ranks' agreement '" + point + "'");
        if (std::chrono::steady_clock::now() > deadline)
          abort_job(own_error + "the other ranks did not reach '" + point + "' within " + seconds_str(limit) +
                    " s (" + (wait == Wait::after_error ? "RCTS_MPI_ERROR_TIMEOUT; they are probably waiting in a "
                                                          "collective for this rank"
                                                        : "RCTS_MPI_TIMEOUT") +
                    "): aborting the job");
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(5000));
      }
    };
    const auto n = static_cast<size_t>(size_);
    if (text.size() > INT_MAX) abort_job("agreement record at '" + point + "' exceeds INT_MAX bytes");
    const int len = static_cast<int>(text.size());
    std::vector<int> lens(n), displs(n);
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, impl_->comm, &req) != MPI_SUCCESS)
      abort_job(own_error + "MPI_Iallgather failed at '" + point + "': aborting the job");
    finish(req);
    int64_t total = 0;
    for (size_t r = 0; r < n; ++r) {
      displs[r] = static_cast<int>(total);
      total += lens[r];
      if (total > INT_MAX) abort_job("agreement records at '" + point + "' exceed INT_MAX bytes");
    }
    std::string all(static_cast<size_t>(total), '\0');
    if (MPI_Iallgatherv(text.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, impl_->comm,
                        &req) != MPI_SUCCESS)
      abort_job(own_error + "MPI_Iallgatherv failed at '" + point + "': aborting the job");
    finish(req);
    for (size_t r = 0; r < n; ++r)
      texts.push_back(all.substr(static_cast<size_t>(displs[r]), static_cast<size_t>(lens[r])));
  }
#endif
  else {
    texts = all_gather_strings(*world_, text);  // a backend without timed collectives
  }
  std::vector<nlohmann::json> out;
  for (size_t r = 0; r < texts.size(); ++r) {
    nlohmann::json j = nlohmann::json::parse(texts[r], nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
      abort_job("rank " + std::to_string(r) + " sent an unreadable record at '" + point + "'");
    out.push_back(std::move(j));
  }
  std::string elsewhere;
  for (size_t r = 0; r < out.size(); ++r)
    if (out[r].value("at", "") != point)
      elsewhere += "\n  rank " + std::to_string(r) + " is at '" + out[r].value("at", "?") + "'" +
                   (out[r].contains("error") ? ": " + out[r]["error"].get<std::string>() : "");
  if (!elsewhere.empty())
    abort_job((mine.contains("error") ? mine["error"].get<std::string>() + "\n" : "") + "this rank is at '" + point +
              "' but" + elsewhere + "\nThe ranks are out of step: aborting the job");
  return out;
}

// --- verdicts ------------------------------------------------------------------------

std::optional<std::string> start_verdict(const std::vector<nlohmann::json>& per_rank) {
  if (auto e = errors_of(per_rank)) return e;
  std::string out;
  // A rank of an older build may not send every field: a missing one differs too.
  auto value_of = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string("(not given)");
  };
  for (const char* key : {"command", "build", "executable"}) {
    const std::string first = value_of(per_rank.at(0), key);
    for (size_t r = 1; r < per_rank.size(); ++r)
      if (const std::string mine = value_of(per_rank[r], key); mine != first)
        out += (out.empty() ? "" : "; ") + std::string("rank 0 runs '") + first + "', rank " + std::to_string(r) +
               " runs '" + mine + "'";
    if (!out.empty())
      return std::string("the ranks run different ") + (std::string(key) == "command" ? "commands" : "rcts builds") +
             (std::string(key) == "executable" ? " (sha256 of the executable)" : "") + ": " + out +
             " (every rank of a job must run the same one)";
  }
  return std::nullopt;
}

std::optional<std::string> load_verdict(const std::vector<nlohmann::json>& per_rank) { return errors_of(per_rank); }

std::optional<std::string> case_list_verdict(const std::vector<nlohmann::json>& per_rank) {
  const auto ids = [&](size_t r) { return per_rank.at(r).at("cases").get<std::vector<std::string>>(); };
  const auto first = ids(0);
  std::string out;
  for (size_t r = 1; r < per_rank.size(); ++r) {
    const auto mine = ids(r);
    if (mine == first) continue;
    const std::set<std::string> a(first.begin(), first.end()), b(mine.begin(), mine.end());
    std::vector<std::string> only0, onlyr;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only0));
    std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(onlyr));
    std::string line = "rank 0 selects " + std::to_string(first.size()) + " case(s), rank " + std::to_string(r) +
                       " selects " + std::to_string(mine.size());
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? ", " : "") + v[i];
      return v.size() > 5 ? s + ", ..." : s;
    };
    if (!only0.empty()) line += "; only on rank 0: " + list(only0);
    if (!onlyr.empty()) line += "; only on rank " + std::to_string(r) + ": " + list(onlyr);
    if (only0.empty() && onlyr.empty()) line += " (in another order)";
    out += "\n  " + line;
  }
  if (out.empty()) return std::nullopt;
  return "the ranks were given different case sets:" + out + "\nEvery rank of a job must run the same cases.";
}

std::optional<std::string> case_verdict(const std::vector<nlohmann::json>& per_rank) {
  if (auto e = errors_of(per_rank)) return e;
  // The file may sit at a different path on each rank; only its content must agree.
  auto comparable = [](nlohmann::json j) {
    j.erase("file");
    return j;
  };
  const nlohmann::json first = comparable(per_rank.at(0));
  std::string out;
  for (size_t r = 1; r < per_rank.size(); ++r) {
    const nlohmann::json mine = comparable(per_rank[r]);
    if (mine == first) continue;
    std::string line = "rank " + std::to_string(r) + " (" + per_rank[r].value("file", "?") + ") disagrees with rank 0 (" +
                       per_rank[0].value("file", "?") + ") about case " + per_rank[0].value("case", "?") + ":";
    int shown = 0;
    std::set<std::string> seen;
    for (const auto& op : nlohmann::json::diff(first, mine)) {
      const std::string path = op.at("path").get<std::string>();
      if (!seen.insert(path).second) continue;
      if (++shown > 6) {
        line += "\n    ...";
        break;
      }
      const nlohmann::json::json_pointer p(path);
      const nlohmann::json* a = first.contains(p) ? &first.at(p) : nullptr;
      const nlohmann::json* b = mine.contains(p) ? &mine.at(p) : nullptr;
      line += "\n    " + path + ": " + short_value(a) + " on rank 0, " + short_value(b) + " on rank " + std::to_string(r);
    }
    out += (out.empty() ? "" : "\n") + line;
  }
  if (out.empty()) return std::nullopt;
  return out + "\nEvery rank of a job must run the same case files.";
}

// --- the points ------------------------------------------------------------------------

std::string executable_sha256() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  if (!in) return "unreadable";
  Sha256 h;
  std::vector<char> buf(size_t{1} << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    h.update(buf.data(), static_cast<size_t>(in.gcount()));
  return in.bad() ? "unreadable" : h.hex();
}

nlohmann::json start_record(const std::string& command) {
  return {{"command", command},
          {"build", std::string(kVersion) + " (" + kGitSha + ")"},
          {"executable", executable_sha256()},
          {"pid", static_cast<long>(::getpid())},
          {"host", RankWatchdog::this_host()}};
}

void agree_on_start(RankAgreement& a, const std::string& command) {
  nlohmann::json mine = start_record(command);
  if (!a.setup_error().empty()) mine["error"] = a.setup_error();
  const auto all = a.exchange("start", mine);
  if (auto v = start_verdict(all)) throw AgreedError(*v);
  a.start_watchdog(all);
}

void agree_on_load(RankAgreement& a, const std::string& error) {
  nlohmann::json mine = nlohmann::json::object();
  if (!error.empty()) mine["error"] = error;
  if (auto v = load_verdict(a.exchange("load", mine))) throw AgreedError(*v);
}

int agree_on_exit(RankAgreement& a, int status, bool failed_here, const std::string& error) {
  if (a.size() == 1) return status;
  nlohmann::json mine{{"status", status}};
  if (!error.empty()) mine["error"] = error;
  const auto all = a.exchange("exit", mine,
                              failed_here ? RankAgreement::Wait::after_error : RankAgreement::Wait::normal);
  a.stop_watchdog();  // past the last exchange no rank waits for another
  int worst = status;
  for (const auto& r : all) worst = std::max(worst, r.at("status").get<int>());
  return worst;
}

}  // namespace rcts::harness
