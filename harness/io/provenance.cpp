// Run-time git provenance (provenance.hpp): git is run as a child process with an
// argument vector (no shell, so any path is safe) and its stdout read through a pipe.
#include "harness/io/provenance.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <vector>

#include "harness/io/version.hpp"

#ifndef RCTS_GIT_SOURCE_DIR
#define RCTS_GIT_SOURCE_DIR ""
#endif

namespace rcts::harness {

namespace {

// stdout of `git <args>`, or nullopt when it cannot run or exits non-zero.
std::optional<std::string> git(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  std::vector<std::string> argv_s = {"git"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    // git's complaints (not a repository, dubious ownership) are not rcts's output.
    if (FILE* null = std::fopen("/dev/null", "w")) dup2(fileno(null), STDERR_FILENO);
    execvp("git", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

}  // namespace

std::optional<GitState> read_git_state(const std::filesystem::path& dir) {
  if (dir.empty()) return std::nullopt;
  const std::string d = dir.string();
  // The source tree itself must be the top of a work tree: a build unpacked from a
  // tarball inside some other repository must not report that repository's commit.
  const auto top = git({"-C", d, "rev-parse", "--show-toplevel"});
  if (!top) return std::nullopt;
  std::error_code ec;
  std::string t = *top;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  if (!std::filesystem::equivalent(t, dir, ec)) return std::nullopt;
  auto sha = git({"-C", d, "rev-parse", "--short=12", "HEAD"});
  if (!sha) return std::nullopt;
  while (!sha->empty() && std::isspace(static_cast<unsigned char>(sha->back()))) sha->pop_back();
  if (sha->empty()) return std::nullopt;
  const auto status = git({"--no-optional-locks", "-C", d, "status", "--porcelain", "--untracked-files=no"});
  if (!status) return std::nullopt;
  return GitState{*sha, !status->empty()};
}

const std::string& run_git_sha() {
  static const std::string sha = [] {
    if (auto s = read_git_state(RCTS_GIT_SOURCE_DIR)) return s->str();
    return std::string(kGitSha) + " (configure time)";
  }();
  return sha;
}

}  // namespace rcts::harness
