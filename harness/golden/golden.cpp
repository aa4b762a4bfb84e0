#include "harness/golden/golden.hpp"

#include <cstring>
#include <map>
#include <sstream>

#include "harness/io/gather.hpp"
#include "harness/io/strict_json.hpp"
#include "harness/io/hex_bits.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {
std::string stats_str(const TensorStats& s) {
  std::ostringstream os;
  os.precision(9);
  os << "min " << s.min << " max " << s.max << " mean " << s.mean << " l2 " << s.l2;
  if (s.nan_count || s.inf_count) os << " nan " << s.nan_count << " inf " << s.inf_count;
  return os.str();
}
}  // namespace

Golden golden_of_rank(const Case& c, const RunRecord& r, const std::string& backend);

Golden golden_of(const Case& c, const RunRecord& r, const std::string& backend, Communicator* world) {
  Golden mine = golden_of_rank(c, r, backend);
  if (!world || world->size() == 1) return mine;
  Golden all;
  all.case_id = mine.case_id;
  all.backend = backend;
  all.side_effects.emplace();
  const auto parts = all_gather_strings(*world, golden_to_json(mine).dump());
  for (size_t rank = 0; rank < parts.size(); ++rank) {
    const Golden g = golden_from_json(nlohmann::json::parse(parts[rank]), "rank " + std::to_string(rank));
    const std::string tag = "rank" + std::to_string(rank) + "/";
    for (const auto& l : g.losses) all.losses.push_back(l);
    for (const auto& [key, bits] : g.side_effects.value_or(SideEffectBits{})) (*all.side_effects)[tag + key] = bits;
    for (auto t : g.tensors) {
      t.name = tag + t.name;
      all.tensors.push_back(std::move(t));
    }
  }
  return all;
}

Golden golden_of_rank(const Case& c, const RunRecord& r, const std::string& backend) {
  Golden g;
  g.case_id = c.id;
  g.backend = backend;
  for (double l : r.losses) g.losses.push_back(double_hex_bits(l));
  g.side_effects = side_effect_bits(r.side_effects);
  const int per = r.config.run.micro_batches;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const std::string tag = ".step" + std::to_string(static_cast<int>(i) / per) + ".mb" + std::to_string(static_cast<int>(i) % per);
    auto d = digest_tensor(r.outputs[i]);
    d.name = "output" + tag;
    g.tensors.push_back(d);
    if (r.input_grads[i].defined()) {
      d = digest_tensor(r.input_grads[i]);
      d.name = "input_grad" + tag;
      g.tensors.push_back(d);
    }
  }
  for (size_t i = 0; i < r.params.size(); ++i) {
    auto d = digest_tensor(r.params[i].tensor);
    d.name = r.params[i].name;
    g.tensors.push_back(d);
    d = digest_tensor(r.grads[i].tensor);
    d.name = r.grads[i].name;
    g.tensors.push_back(d);
  }
  return g;
}

nlohmann::json golden_to_json(const Golden& g) {
  nlohmann::json j;
  j["case"] = g.case_id;
  j["backend"] = g.backend;
  j["written_by"] = "rcts regen-golden";
  j["losses"] = g.losses;
  if (g.side_effects) j["side_effects"] = *g.side_effects;
  j["tensors"] = g.tensors;
  return j;
}

Golden golden_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    Golden g;
    g.case_id = j.at("case").get<std::string>();
    g.backend = j.at("backend").get<std::string>();
    g.losses = j.at("losses").get<std::vector<std::string>>();
    g.side_effects = side_effects_from_json(j, where);
    g.tensors = j.at("tensors").get<std::vector<TensorDigest>>();
    return g;
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": not a valid golden file (" + e.what() + "); regenerate it with scripts/regen-golden");
  }
}

fs::path golden_path(const fs::path& dir, const std::string& backend, const std::string& case_id, int world_size) {
  return dir / backend / (case_id + (world_size > 1 ? ".np" + std::to_string(world_size) : std::string()) + ".json");
}

CheckResult check_golden(const Case& c, const RunRecord& r, const fs::path& dir, const std::string& backend,
                         Communicator* world) {
  const Golden got = golden_of(c, r, backend, world);  // collective in a multi-rank run
  const fs::path file = golden_path(dir, backend, c.id, world ? world->size() : 1);
  if (!fs::exists(file))
    return {"golden", Outcome::fail,
            file.string() + " is missing. If this case is new (or its baseline changed on purpose), run\n  " +
                (world && world->size() > 1 ? "mpirun -np " + std::to_string(world->size()) + " build/harness/rcts regen-golden "
                                            : std::string("scripts/regen-golden ")) +
                c.file.string() + "\nand commit the file it writes."};
  nlohmann::json j;
  try {
    j = read_json_file(file, "golden file");
  } catch (const Error& e) {
    return {"golden", Outcome::fail, e.message()};
  }
  const Golden want = golden_from_json(j, file.string());
  auto changes = golden_changes(want, got);
  if (changes.empty())
    return {"golden", Outcome::pass,
            std::to_string(got.tensors.size()) + " tensor digests, " + std::to_string(got.losses.size()) + " losses and " +
                std::to_string(got.side_effects ? got.side_effects->size() : 0) + " side effects equal " + file.string()};
  std::string detail = std::to_string(changes.size()) + " difference(s) from " + file.string() + ":";
  // A file without the field cannot vouch for side effects: it fails rather than
  // letting an aux-loss bug pass unseen.
  if (!want.side_effects) detail += "\n  (the file has no side_effects: it was written before they were recorded)";
  for (size_t i = 0; i < changes.size() && i < 8; ++i) detail += "\n  " + changes[i];
  if (changes.size() > 8) detail += "\n  ...";
  detail += "\nIf the change is intended, regenerate with scripts/regen-golden and say why in the commit.";
  return {"golden", Outcome::fail, detail};
}

std::vector<std::string> golden_changes(const Golden& before, const Golden& after) {
  std::vector<std::string> out;
  for (size_t i = 0; i < std::max(before.losses.size(), after.losses.size()); ++i) {
    const std::string a = i < before.losses.size() ? before.losses[i] : "<none>";
    const std::string b = i < after.losses.size() ? after.losses[i] : "<none>";
    if (a != b) out.push_back("loss[" + std::to_string(i) + "]: " + a + " -> " + b);
  }
  for (auto& line : side_effect_changes(before.side_effects, after.side_effects)) out.push_back(std::move(line));
  std::map<std::string, const TensorDigest*> old;
  for (const auto& t : before.tensors) old[t.name] = &t;
  for (const auto& t : after.tensors) {
    auto it = old.find(t.name);
    if (it == old.end()) {
      out.push_back(t.name + ": new");
      continue;
    }
    const TensorDigest& o = *it->second;
    if (o.shape != t.shape || o.dtype != t.dtype)
      out.push_back(t.name + ": layout " + o.dtype + shape_str(o.shape) + " -> " + t.dtype + shape_str(t.shape));
    else if (o.sha256 != t.sha256)
      out.push_back(t.name + ": sha256 " + o.sha256.substr(0, 12) + " -> " + t.sha256.substr(0, 12) + "  (was " +
                    stats_str(o.stats) + "; now " + stats_str(t.stats) + ")");
    old.erase(it);
  }
  for (const auto& [name, d] : old) out.push_back(name + ": removed");
  return out;
}

}  // namespace rcts::harness
