// Where `rcts run --dump DIR` (and --report DIR) writes: a fresh hidden sibling of DIR, put
// in DIR's place in one step when the run ends (atomic_file.hpp put_directory), so DIR
// never mixes the tensors of two runs, is never missing, and holds only complete
// dumps: when any rank failed to write its part, nothing is put in place. An existing
// non-empty DIR is refused unless `replace` (--dump-replace) says to replace it whole,
// also when another run fills DIR meanwhile. In a multi-rank run rank 0 prepares and
// puts in place, and every rank writes into the same staging directory (ranks on one
// host or a shared file system). What killed runs left beside DIR is removed first.
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
  // Every rank: `failure` is empty when this rank wrote all of its part, else why not.
  // When every rank's part is complete, rank 0 puts the staging directory in DIR's
  // place; else the staging directory is removed, DIR is left as it was and rcts::Error
  // (AgreedError in a multi-rank run) names the failing rank. Every rank must have
  // finished writing (the runner's last exchange guarantees it).
  void commit(const std::string& failure = "");

 private:
  std::filesystem::path target_, staging_;
  std::string option_;
  RankAgreement* agreement_ = nullptr;
  bool replace_ = false;
  bool owner_ = true;  // this rank created the staging directory
  bool committed_ = false;
};

}  // namespace rcts::harness
