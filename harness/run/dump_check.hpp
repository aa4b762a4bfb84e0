// `rcts check DIR...` (docs/dump-format.md, "Checks over dumps"): the dumps below some
// directories, grouped by case and backend, and the record source that hands the
// runner each run of a case from its dump instead of executing it. What a dump must
// match is checked here: its case, run, world size, rank coordinates and the config
// rcts resolves for that run; any difference is an rcts::Error naming the dump file
// and the field.
#pragma once
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/run/runner.hpp"

namespace rcts::harness {

// The dumps of one case on one backend: (world rank, run name) -> directory.
struct DumpGroup {
  std::string case_id;
  std::string backend;
  int world_size = 1;
  std::map<std::pair<int, std::string>, std::filesystem::path> runs;
};

// Every dump.json below (or in) each of `dirs`, grouped; reads only each manifest's
// case, run, implementation and rank fields. Throws rcts::Error naming the file for a
// manifest it cannot read, a directory with no dump, two dumps of the same run and
// rank, or dumps of one case and backend that disagree on the world size.
// `allow_empty` (rcts check --expect, where the skips count too): a directory may hold no dump.
std::vector<DumpGroup> index_dumps(const std::vector<std::filesystem::path>& dirs, bool allow_empty = false);

// The runs of one group for this world rank.
class DumpSource : public RecordSource {
 public:
  DumpSource(const DumpGroup& group, int world_rank) : group_(group), rank_(world_rank) {}
  RunRecord record(const Case& c, const std::string& run, const Config& cfg, const RankCoords& coords) const override;
  // The group's dumps (of any rank) of runs no check has asked for, e.g. "rank 0 'x' (dir)".
  std::vector<std::string> unread() const;

 private:
  const DumpGroup& group_;
  int rank_;
  mutable std::set<std::string> read_;  // the runs the case's checks asked for
};

// Runs the checks of every dumped case (found by id in `cases`, filtered by
// options.scope.filter) over its dumps, one result per case and backend, reporting progress
// like run_cases. A group dumped from another number of ranks than this run has is an
// error result saying how to run it.
std::vector<CaseResult> check_dump_groups(const std::vector<Case>& cases, const std::vector<DumpGroup>& groups,
                                          const RunOptions& options, std::ostream* progress);

// The first JSON pointer at which `got` differs from `want` ("" when equal), with both
// values, e.g. "/model/hidden_size: 32, rcts resolves 16".
std::string first_difference(const nlohmann::json& want, const nlohmann::json& got, const std::string& path = "");

}  // namespace rcts::harness
