// Provenance of a run: the commit the source tree stands at when rcts starts, not when
// CMake configured. The sha comes from `git` in the source tree the binary was built
// from, with "-dirty" when a tracked file differs from that commit (untracked files do
// not count, as with `git describe --dirty`). Without git or without a work tree (an
// installed binary, a tarball) it falls back to the sha CMake saw at configure time,
// labelled "(configure time)" so a reader knows it may be stale.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace rcts::harness {

struct GitState {
  std::string sha;  // 12 hex digits
  bool dirty = false;
  std::string str() const { return sha + (dirty ? "-dirty" : ""); }
};

// HEAD and dirtiness of the work tree at `dir`; nullopt when `dir` is no git work
// tree or git cannot be run. Reads only (never takes the index lock).
std::optional<GitState> read_git_state(const std::filesystem::path& dir);

// What reports show: read_git_state(<source tree>)->str(), else
// "<configure-time sha> (configure time)". Read on first use and cached: a command that
// prints no provenance never runs git. A rank of an MPI job calls it before MPI starts
// (it runs git as a child process).
const std::string& run_git_sha();

}  // namespace rcts::harness
