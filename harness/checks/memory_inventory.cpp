// Inventory matching: per layer, a multiset of "dtype shape" keys; the measured side is
// deduplicated by (storage, offset, bytes) as the writer's per-layer totals are (a tensor
// two ops keep is held once), and a save that holds 0 bytes is no tensor held.
#include "harness/checks/memory_inventory.hpp"

#include <map>
#include <set>
#include <tuple>

#include "reference/memory_model/saved_profile.hpp"

namespace rcts::harness {
namespace {

std::string mb_of(const RunRecord& r, size_t i) {
  const int per = r.config.run.micro_batches;
  return "step " + std::to_string(static_cast<int>(i) / per) + " micro-batch " + std::to_string(static_cast<int>(i) % per);
}

// The layer a module path lies in ("layers.3.mlp" -> 3), or -1.
int layer_of(const std::string& module) {
  if (module.rfind("layers.", 0) != 0) return -1;
  size_t end = module.find('.', 7);
  const std::string n = module.substr(7, end == std::string::npos ? std::string::npos : end - 7);
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 6) return -1;
  return std::stoi(n);
}

struct Measured {
  const SaveRecord* save;
  const RunRecord::SaveShape* shape;
  std::string key() const { return shape->dtype + " " + shape_text(shape->shape); }
};

std::string describe(const Measured& m) {
  return m.key() + " (" + std::to_string(m.save->bytes) + " bytes) saved by " +
         (m.shape->op.empty() ? std::string("an unnamed op") : m.shape->op) + " in " + m.save->module_path;
}

std::string describe(const SavedProfile& p, const SavedEntry& e, int layer) {
  const ProfileRow& r = p.row(e.row);
  const std::string module = "layers." + std::to_string(layer) + (e.module.empty() ? "" : "." + e.module);
  return e.dtype + " " + shape_text(e.shape) + " (" + std::to_string(e.bytes) + " bytes), profile " +
         std::string(p.name) + " row " + std::string(r.id) + ": " + module + " " + std::string(r.op) + " keeps " +
         std::string(r.keeps) + " (" + std::string(r.source) + ")";
}

}  // namespace

std::optional<std::string> inventory_differs(const RunRecord& run, const std::string& label, std::string& detail) {
  const SavedProfile* p = find_profile(run.memory_profile);
  if (!p) return label + ": unknown saved-tensor profile '" + run.memory_profile + "'";
  if (const std::string why = inventory_unmodelled(*p, run.config); !why.empty()) {
    detail = "per-layer bytes not compared (" + why + ")";
    return std::nullopt;
  }
  const auto model = stage_inventory(*p, run.config);
  const size_t L = model.size();
  std::vector<int64_t> want(L, 0);
  for (size_t l = 0; l < L; ++l)
    for (const auto& e : model[l]) want[l] += e.bytes;
  const std::string prof = "profile " + std::string(p->name);
  bool shapes_seen = false;
  for (size_t i = 0; i < run.saved_bytes_per_layer.size(); ++i) {
    const auto& per_layer = run.saved_bytes_per_layer[i];
    const bool have = i < run.saves_per_micro_batch.size() && i < run.save_shapes_per_micro_batch.size() &&
                      !run.saves_per_micro_batch[i].empty() && !run.save_shapes_per_micro_batch[i].front().dtype.empty();
    if (!have) {  // totals only
      for (size_t l = 0; l < L; ++l)
        if (l >= per_layer.size() || per_layer[l] != want[l])
          return label + ": " + mb_of(run, i) + ": layers." + std::to_string(l) + " saved " +
                 (l < per_layer.size() ? std::to_string(per_layer[l]) : std::string("nothing")) + " bytes, " + prof +
                 " says " + std::to_string(want[l]) + " (the dump lists no saved-tensor shapes to say which differ)";
      continue;
    }
    shapes_seen = true;
    const auto& saves = run.saves_per_micro_batch[i];
    const auto& shapes = run.save_shapes_per_micro_batch[i];
    std::vector<std::vector<Measured>> got(L);
    std::vector<std::set<std::tuple<uint64_t, int64_t, int64_t>>> seen(L);
    for (size_t k = 0; k < saves.size(); ++k) {
      const int l = layer_of(saves[k].module_path);
      if (l < 0 || static_cast<size_t>(l) >= L) continue;  // outside the block's layers: not a layer's save
      // A save whose storage was freed before the forward ended (an output-discarding
      // recompute's output, a checkpoint's no-grad saves) holds nothing: no tensor to match.
      if (saves[k].bytes == 0) continue;
      if (shapes[k].dtype.empty())
        return label + ": " + mb_of(run, i) + ": saved_tensors entry " + std::to_string(k) + " (" + saves[k].module_path +
               ") has no dtype and shape while others have";
      if (!seen[l].insert({saves[k].storage_id, saves[k].offset, saves[k].bytes}).second) continue;
      got[l].push_back({&saves[k], &shapes[k]});
    }
    for (size_t l = 0; l < L; ++l) {
      int64_t held = 0;
      for (const auto& m : got[l]) held += m.save->bytes;
      const std::string layer = "layers." + std::to_string(l);
      const std::string totals = "; " + layer + " holds " + std::to_string(held) + " bytes, " + prof + " says " +
                                 std::to_string(want[l]);
      std::multiset<std::string> expected;
      for (const auto& e : model[l]) expected.insert(e.dtype + " " + shape_text(e.shape));
      std::multiset<std::string> measured;
      for (const auto& m : got[l]) measured.insert(m.key());
      for (const auto& m : got[l]) {
        auto it = expected.find(m.key());
        if (it == expected.end())
          return label + ": " + mb_of(run, i) + ": " + layer + ": extra " + describe(m) + ", in no row of " + prof +
                 totals;
        expected.erase(it);
      }
      for (const auto& e : model[l]) {
        const std::string key = e.dtype + " " + shape_text(e.shape);
        auto it = measured.find(key);
        if (it == measured.end()) {
          // Which of the rows with this dtype and shape went unsaved the dump cannot say.
          std::string alike;
          for (const auto& o : model[l])
            if (o.row != e.row && o.dtype + " " + shape_text(o.shape) == key && alike.find(o.row) == std::string::npos)
              alike += (alike.empty() ? "" : ", ") + o.row;
          return label + ": " + mb_of(run, i) + ": " + layer + ": missing " + describe(*p, e, static_cast<int>(l)) +
                 ", not saved by the run" + (alike.empty() ? "" : " (or one of rows " + alike + ": same dtype and shape)") +
                 totals;
        }
        measured.erase(it);
      }
      if (l < per_layer.size() && per_layer[l] != held)
        return label + ": " + mb_of(run, i) + ": " + layer + ": saved_bytes_per_layer says " +
               std::to_string(per_layer[l]) + " bytes but its saved_tensors hold " + std::to_string(held);
    }
  }
  size_t tensors = 0;
  for (const auto& l : model) tensors += l.size();
  detail = std::string(shapes_seen ? "per-layer saved tensors (dtype, shape) equal " : "per-layer bytes equal ") + prof +
           " (" + std::to_string(tensors) + " tensors over " + std::to_string(L) +
           " layers); backward peak not compared (the profile has no peak model)";
  return std::nullopt;
}

std::optional<std::string> held_after_backward(const RunRecord& run, const std::string& label) {
  for (size_t i = 0; i < run.held_after_backward.size(); ++i) {
    const auto& held = run.held_after_backward[i];
    if (held.empty()) continue;
    int64_t bytes = 0;
    for (const auto& s : held) bytes += s.bytes;
    const auto& sh = run.held_after_backward_shapes.at(i).front();
    const std::string what = sh.dtype.empty() ? held.front().tensor : sh.dtype + " " + shape_text(sh.shape);
    return label + ": " + mb_of(run, i) + ": after backward the run still holds " + what + " (" +
           std::to_string(held.front().bytes) + " bytes) " + (sh.op.empty() ? "" : "from " + sh.op + " ") + "in " +
           held.front().module_path + (held.size() > 1 ? " and " + std::to_string(held.size() - 1) + " more" : "") +
           ", " + std::to_string(bytes) + " bytes in all; the model holds nothing saved or recomputed once backward ends";
  }
  return std::nullopt;
}

}  // namespace rcts::harness
