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
#include "backends/registry.hpp"
#include "reference/driver/model.hpp"
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

// A process group in which this rank has this place, for building a model's parameters
// without running it: any communication is a bug.
class PlaceOnlyCommunicator final : public Communicator {
 public:
  PlaceOnlyCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "place-only"; }
  void all_gather(const void*, void*, int64_t) override { refuse(); }
  void all_to_allv(const void*, const int64_t*, void*, const int64_t*) override { refuse(); }
  void broadcast(void*, int64_t, int) override { refuse(); }
  void barrier() override { refuse(); }

 private:
  [[noreturn]] static void refuse() { throw Error("listing a config's parameters communicated (a bug in rcts)"); }
  int rank_, size_;
};

struct ParameterShape {
  std::string name;
  Shape shape;
  DType dtype;
};

// The parameters rcts's model of `cfg` holds on the rank at `coords` of a world of
// `world_size`, in its order: what a dump of this run must hold.
std::vector<ParameterShape> parameters_of(const Config& cfg, const RankCoords& coords, int world_size) {
  const auto backend = make_backend("cpu");
  Runtime rt(cfg, *backend);
  std::vector<std::unique_ptr<PlaceOnlyCommunicator>> groups;
  if (world_size > 1) {
    const auto& p = cfg.parallel;
    const GroupLayout l = make_layout(world_size, p.tensor_model_parallel_size, p.expert_model_parallel_size,
                                      p.expert_tensor_parallel_size, p.pipeline_model_parallel_size);
    auto group = [&](GroupKind k, int rank) {
      groups.push_back(std::make_unique<PlaceOnlyCommunicator>(rank, group_size(l, k)));
      return groups.back().get();
    };
    rt.tp_group = group(GroupKind::tp, coords.tp);
    rt.dp_group = group(GroupKind::dp, coords.dp);
    rt.ep_group = group(GroupKind::ep, coords.ep);
    rt.etp_group = group(GroupKind::etp, coords.etp);
    rt.edp_group = group(GroupKind::edp, coords.edp);
  }
  rt.pp_rank = coords.pp;
  seed_runtime(rt, coords.tp, coords.ep, coords.etp, coords.pp);
  GptModel model(rt);
  std::vector<ParameterShape> out;
  for (const Parameter* q : model.parameters()) out.push_back({q->name, q->value.shape(), q->value.dtype()});
  return out;
}

// A dump's parameters are exactly the config's on this rank (names, order, shapes,
// dtypes), and every step's parameters and gradients have their shapes and dtypes: a
// dump holding fewer or smaller parameters would otherwise pass every comparison of
// its runs with each other.
void check_parameters(const RunRecord& r, const std::vector<ParameterShape>& want, const std::string& file) {
  const auto& got = r.params;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 4; ++i) s += (i ? ", '" : "'") + v[i] + "'";
    return v.size() > 4 ? s + ", ... (" + std::to_string(v.size()) + ")" : s;
  };
  if (got.size() != want.size()) {
    std::vector<std::string> missing, extra;
    for (const auto& w : want)
      if (std::none_of(got.begin(), got.end(), [&](const NamedTensor& g) { return g.name == w.name; }))
        missing.push_back(w.name);
    for (const auto& g : got)
      if (std::none_of(want.begin(), want.end(), [&](const ParameterShape& w) { return w.name == g.name; }))
        extra.push_back(g.name);
    throw Error(file + ": /parameters: " + std::to_string(got.size()) + " parameter(s), the config has " +
                std::to_string(want.size()) + " on this rank" + (missing.empty() ? "" : "; missing " + list(missing)) +
                (extra.empty() ? "" : "; not the config's " + list(extra)));
  }
  auto same = [&](const NamedTensor& g, const ParameterShape& w, const std::string& where) {
    if (g.tensor.shape() != w.shape)
      throw Error(file + ": " + where + " ('" + g.name + "'): shape " + shape_str(g.tensor.shape()) +
                  ", the config's is " + shape_str(w.shape) + " on this rank");
    if (g.tensor.dtype() != w.dtype)
      throw Error(file + ": " + where + " ('" + g.name + "'): dtype " + std::string(dtype_name(g.tensor.dtype())) +
                  ", the config's parameters are " + std::string(dtype_name(w.dtype)));
  };
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i].name != want[i].name)
      throw Error(file + ": /parameters/" + std::to_string(i) + ": named '" + got[i].name +
                  "', the config's parameter at this position is '" + want[i].name + "'");
    same(got[i], want[i], "/parameters/" + std::to_string(i));
  }
  // The reader matched every step's and micro-batch's names with /parameters already.
  for (size_t s = 0; s < r.params_before_step.size(); ++s)
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string at = "/steps/" + std::to_string(s);
      same(r.params_before_step[s].at(i), want[i], at + "/params_before/" + std::to_string(i));
      same(r.grads_of_step.at(s).at(i), want[i], at + "/grads/" + std::to_string(i));
    }
  for (size_t m = 0; m < r.grads_after_micro_batch.size(); ++m)
    for (size_t i = 0; i < want.size(); ++i)
      same(r.grads_after_micro_batch[m].at(i), want[i],
           "/micro_batches/" + std::to_string(m) + "/param_grads/" + std::to_string(i));
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
  check_parameters(d.record, parameters_of(cfg, coords, group_.world_size), file);
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
