// Where `rcts run --dump DIR` (and --report DIR) writes: a fresh hidden sibling of DIR, renamed to DIR when
// the run ends, so DIR never mixes the tensors of two runs. An existing non-empty DIR
// is refused unless `replace` (--dump-replace) says to replace it whole. In a multi-rank
// run rank 0 prepares and renames, and every rank writes into the same staging directory
// (ranks on one host or a shared file system).
#pragma once
#include <filesystem>
#include <string>

namespace rcts::harness {

class RankAgreement;

class DumpStaging {
 public:
  // Throws rcts::Error (AgreedError in a multi-rank run) naming DIR and what is wrong.
  // `option` names the command-line option in messages ("--dump", "--report"; its
  // replace flag is option + "-replace").
  DumpStaging(std::filesystem::path target, bool replace, RankAgreement* agreement, std::string option = "--dump");
  // Removes the staging directory unless commit() moved it into place.
  ~DumpStaging();
  DumpStaging(const DumpStaging&) = delete;
  DumpStaging& operator=(const DumpStaging&) = delete;

  const std::filesystem::path& staging() const { return staging_; }
  // Rank 0: moves the staging directory to DIR, replacing what was there. Every rank
  // must have finished writing (the runner's last exchange guarantees it).
  void commit();

 private:
  std::filesystem::path target_, staging_;
  std::string option_;
  bool owner_ = true;  // this rank created the staging directory
  bool committed_ = false;
};

}  // namespace rcts::harness
