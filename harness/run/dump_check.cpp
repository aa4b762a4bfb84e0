#include "harness/run/dump_check.hpp"

#include <algorithm>
#include <ostream>
#include <sstream>
#include <tuple>

#include "harness/checks/compare.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "harness/io/json_reader.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/limits.hpp"
#include "reference/runtime/parameter.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string brief(const json& j) {
  std::string s = j.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string coords_str(const RankCoords& c) {
  return "tp " + std::to_string(c.tp) + ", cp " + std::to_string(c.cp) + ", dp " + std::to_string(c.dp) + ", pp " +
         std::to_string(c.pp) + ", etp " + std::to_string(c.etp) + ", ep " + std::to_string(c.ep) + ", edp " +
         std::to_string(c.edp);
}

// The fields index_dumps needs, read strictly enough to name what is missing.
void index_one(const fs::path& manifest, std::vector<DumpGroup>& groups) {
  const json j = read_json_file(manifest, "dump manifest");
  const std::string file = manifest.string();
  const JsonReader root(file, j);
  auto need = [](const JsonReader& r, const char* key) {
    if (!r.json().is_object()) r.fail("expected an object");
    if (!r.has(key)) r.fail("missing field '" + std::string(key) + "'");
    return r.at(key);
  };
  if (need(root, "format").str() != "rcts-dump") root.at("format").fail("not an rcts dump (expected \"rcts-dump\")");
  if (const int64_t v = need(root, "version").integer(0, 1 << 20); v != kDumpVersion)
    root.at("version").fail("this rcts reads dump format version " + std::to_string(kDumpVersion));
  const std::string id = need(need(root, "case"), "id").str();
  const std::string run = need(need(root, "run"), "name").str();
  const std::string backend = need(need(root, "implementation"), "backend").str();
  const JsonReader rank = need(root, "rank");
  const int size = static_cast<int>(need(rank, "world_size").integer(1, 1 << 16));
  const int r = static_cast<int>(need(rank, "world_rank").integer(0, size - 1));
  auto g = std::find_if(groups.begin(), groups.end(),
                        [&](const DumpGroup& x) { return x.case_id == id && x.backend == backend; });
  if (g == groups.end()) {
    groups.push_back({id, backend, size, {}});
    g = groups.end() - 1;
  }
  if (g->world_size != size)
    rank.at("world_size").fail("dumps of case '" + id + "' on '" + backend + "' come from " +
                               std::to_string(g->world_size) + " and " + std::to_string(size) + " ranks");
  const auto [it, fresh] = g->runs.emplace(std::make_pair(r, run), manifest.parent_path());
  if (!fresh)
    throw Error(file + ": run '" + run + "' of case '" + id + "' on rank " + std::to_string(r) +
                " is dumped twice (also " + (it->second / kDumpManifest).string() + ")");
}

// Every micro-batch's input and target are the ones rcts feeds the case (the model's
// fill_uniform streams, docs/dump-format.md "Tokens"): a dump fed other data is not a
// run of this case, whatever its checks say.
void check_fed_data(const RunRecord& r, const std::string& file) {
  const int per = r.config.run.micro_batches;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const int step = static_cast<int>(i) / per, mb = static_cast<int>(i) % per;
    const std::string key = ".step" + std::to_string(step) + ".mb" + std::to_string(mb);
    for (const auto& [what, got, seed] :
         {std::tuple{"input", &r.inputs[i], r.config.run.seed}, {"target", &r.targets.at(i), r.config.run.seed ^ 0x5eedull}}) {
      Tensor want = Tensor::empty(got->shape(), got->dtype(), host_placement(), std::string(what) + key);
      fill_uniform(want, seed, want.name(), 1.0);
      if (const BitwiseDiff diff = compare_bitwise(want, *got); !diff.equal)
        throw Error(file + ": /micro_batches/" + std::to_string(i) + "/" + what + ": not the " + what +
                    " rcts feeds step " + std::to_string(step) + ", micro-batch " + std::to_string(mb) +
                    " of this case (run.seed " + std::to_string(r.config.run.seed) + "): " + diff.message());
    }
  }
}

}  // namespace

std::string first_difference(const json& want, const json& got, const std::string& path) {
  if (want.type() != got.type() && !(want.is_number() && got.is_number()))
    return (path.empty() ? "/" : path) + ": " + brief(got) + ", rcts resolves " + brief(want);
  if (want.is_object()) {
    for (const auto& [k, v] : want.items()) {
      if (!got.contains(k)) return path + "/" + k + ": missing, rcts resolves " + brief(v);
      if (auto d = first_difference(v, got.at(k), path + "/" + k); !d.empty()) return d;
    }
    for (const auto& [k, v] : got.items())
      if (!want.contains(k)) return path + "/" + k + ": " + brief(v) + ", rcts has no such field";
    return "";
  }
  if (want.is_array()) {
    if (want.size() != got.size())
      return (path.empty() ? "/" : path) + ": " + std::to_string(got.size()) + " entries, rcts resolves " +
             std::to_string(want.size());
    for (size_t i = 0; i < want.size(); ++i)
      if (auto d = first_difference(want[i], got[i], path + "/" + std::to_string(i)); !d.empty()) return d;
    return "";
  }
  return want == got ? "" : (path.empty() ? "/" : path) + ": " + brief(got) + ", rcts resolves " + brief(want);
}

std::vector<DumpGroup> index_dumps(const std::vector<fs::path>& dirs, bool allow_empty) {
  std::vector<DumpGroup> groups;
  for (const auto& dir : dirs) {
    if (!fs::is_directory(dir)) throw Error(dir.string() + ": not a directory (rcts check reads dump directories)");
    std::vector<fs::path> manifests;
    if (fs::is_regular_file(dir / kDumpManifest)) manifests.push_back(dir / kDumpManifest);
    int64_t entries = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {  // symlinked directories are not entered
      if (++entries > limits::kMaxDumpDirEntries)
        throw Error(dir.string() + ": more than " + std::to_string(limits::kMaxDumpDirEntries) +
                    " files and directories below it; rcts check reads at most that many");
      if (e.path().filename() != kDumpManifest || e.path().parent_path() == dir) continue;
      if (e.is_symlink()) throw Error(e.path().string() + ": a dump manifest may not be a symbolic link");
      if (e.is_regular_file()) manifests.push_back(e.path());
    }
    if (manifests.size() > static_cast<size_t>(limits::kMaxDumps))
      throw Error(dir.string() + ": " + std::to_string(manifests.size()) + " dumps (" + std::string(kDumpManifest) +
                  " files) below it, more than the " + std::to_string(limits::kMaxDumps) + " rcts check reads");
    if (manifests.empty() && !allow_empty) throw Error(dir.string() + ": holds no dump (no " + std::string(kDumpManifest) + " below it)");
    std::sort(manifests.begin(), manifests.end());  // a stable order whatever the file system lists
    for (const auto& m : manifests) index_one(m, groups);
  }
  return groups;
}

std::vector<std::string> DumpSource::unread() const {
  std::vector<std::string> out;
  for (const auto& [key, dir] : group_.runs)
    if (!read_.count(key.second))
      out.push_back("rank " + std::to_string(key.first) + " '" + key.second + "' (" + dir.string() + ")");
  return out;
}

RunRecord DumpSource::record(const Case& c, const std::string& run, const Config& cfg, const RankCoords& coords) const {
  read_.insert(run);
  const auto it = group_.runs.find({rank_, run});
  if (it == group_.runs.end()) {
    std::string have;
    for (const auto& [key, dir] : group_.runs)
      if (key.first == rank_) have += (have.empty() ? "" : ", ") + ("'" + key.second + "'");
    throw Error("case " + c.id + ": no dump of run '" + run + "' for rank " + std::to_string(rank_) + " on '" +
                group_.backend + "' (dumped runs: " + (have.empty() ? "none" : have) + ")");
  }
  DumpedRun d = read_dump(it->second);
  const std::string file = (it->second / kDumpManifest).string();
  if (d.meta.case_id != c.id)
    throw Error(file + ": /case/id = \"" + d.meta.case_id + "\": expected case '" + c.id + "'");
  if (d.meta.run != run) throw Error(file + ": /run/name = \"" + d.meta.run + "\": expected run '" + run + "'");
  if (const std::string diff = first_difference(config_to_json(cfg), config_to_json(d.record.config)); !diff.empty())
    throw Error(file + ": /config" + diff + " (for case " + c.id + ", run '" + run + "')");
  if (!(d.record.coords == coords))
    throw Error(file + ": /rank: coordinates " + coords_str(d.record.coords) + ", rcts places world rank " +
                std::to_string(rank_) + " at " + coords_str(coords));
  check_fed_data(d.record, file);
  return std::move(d.record);
}

std::vector<CaseResult> check_dump_groups(const std::vector<Case>& cases, const std::vector<DumpGroup>& groups,
                                          const RunOptions& o, std::ostream* progress) {
  std::vector<const DumpGroup*> selected;
  for (const auto& g : groups) {
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const Case& x) { return x.id == g.case_id; });
    if (c == cases.end())
      throw Error((g.runs.begin()->second / kDumpManifest).string() + ": /case/id = \"" + g.case_id +
                  "\": no such case in the case set (give its file or directory with --cases)");
    if (o.scope.filter.empty() || glob_match(o.scope.filter, g.case_id)) selected.push_back(&g);
  }
  const int rank = o.scope.world ? o.scope.world->rank() : 0;
  std::vector<CaseResult> results;
  int i = 0;
  for (const DumpGroup* g : selected) {
    const Case& c = *std::find_if(cases.begin(), cases.end(), [&](const Case& x) { return x.id == g->case_id; });
    if (g->world_size != o.scope.world_size) {
      CaseResult r;
      r.id = c.id;
      r.file = c.file.string();
      r.outcome = Outcome::error;
      r.reason = "dumped from " + std::to_string(g->world_size) + " rank(s), this check runs on " +
                 std::to_string(o.scope.world_size) + ": run `mpirun -n " + std::to_string(g->world_size) +
                 " rcts check ...`";
      results.push_back(std::move(r));
    } else {
      const DumpSource source(*g, rank);
      RunOptions on = o;
      on.scope.records = &source;
      results.push_back(run_case(c, on));
      // A dumped run no check read would pass unjudged: the dump is not this case's.
      if (const auto extra = source.unread(); !extra.empty() && (results.back().outcome == Outcome::pass || results.back().outcome == Outcome::fail)) {
        std::string list;
        for (const auto& e : extra) list += "\n  " + e;
        results.back().outcome = Outcome::error;
        results.back().reason = "case " + c.id + ": " + std::to_string(extra.size()) +
                                " dumped run(s) that are not runs of the case (no check asks for them):" + list;
      }
    }
    results.back().backend = g->backend;
    if (progress) {
      const auto& r = results.back();
      *progress << progress_line(++i, static_cast<int>(selected.size()), r) << '\n';
      if ((r.outcome == Outcome::fail || r.outcome == Outcome::error) && !r.reason.empty()) {
        std::istringstream lines(r.reason);
        for (std::string line; std::getline(lines, line);) *progress << "        " << line << '\n';
      }
      for (const auto& line : judged_lines(r)) *progress << "        " << line << '\n';
      for (const auto& ch : r.checks)
        if (ch.kind == "reference") {
          std::istringstream lines(ch.detail);
          for (std::string line; std::getline(lines, line);) *progress << "        " << line << '\n';
        }
      progress->flush();
    }
  }
  return results;
}

}  // namespace rcts::harness
