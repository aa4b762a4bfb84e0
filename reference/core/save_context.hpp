// SaveContext: what one forward invocation keeps for its backward (docs/design.md §4).
// `save(t, name)` goes through the saved-tensor hooks and re-tags the storage as
// saved_activation (or checkpoint_input); `load(name)` unpacks it again. Saved tensors
// are found by name, never by position, so adding a save cannot shift another. A
// disabled context (the no-grad forward that checkpointing runs) saves nothing.
// Contexts form a tree whose paths name the modules; every save is appended to a
// SaveLog with path, tensor name, bytes and category, so memory checks can say what
// was saved.
//
// Per-invocation state that is not a tensor (RNG snapshots, dispatch plans,
// checkpoint objects) is stashed under a typed key, StashKey<T>: the key's type says
// what is stored, so a stash and its read can never disagree on the type.
#pragma once
#include <any>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference/core/saved_tensor_hooks.hpp"

namespace rcts {

struct SaveRecord {
  std::string module_path;
  std::string tensor;
  int64_t bytes = 0;
  Category category = Category::saved_activation;
  uint64_t storage_id = 0;
  int64_t offset = 0;      // element offset of the view in its storage
  bool recompute = false;  // saved by a recompute (in backward)
  std::string key() const { return module_path.empty() ? tensor : module_path + "." + tensor; }
};

class SaveLog {
 public:
  void add(SaveRecord r) { records_.push_back(std::move(r)); }
  const std::vector<SaveRecord>& records() const { return records_; }
  void clear() { records_.clear(); }

 private:
  std::vector<SaveRecord> records_;
};

// A stash slot holding a T, e.g. `constexpr StashKey<RngStates> kSnapshot{"checkpoint.rng"};`.
template <typename T> struct StashKey {
  const char* name;
};

class SaveContext {
 public:
  // `log` may be null. `recompute` marks saves made while recomputing.
  SaveContext(std::string path, SaveLog* log, bool enabled = true, bool recompute = false);

  bool enabled() const { return enabled_; }
  const std::string& path() const { return path_; }

  // Saves `t` for backward under `tensor_name` (unique within this context). Keeps
  // nothing in a disabled context.
  void save(const Tensor& t, const std::string& tensor_name, Category category = Category::saved_activation);
  // The tensor saved under `tensor_name`; an error naming the context and what it holds
  // when there is none.
  Tensor load(const std::string& tensor_name);
  bool has_saved(const std::string& tensor_name) const;

  // The child context `name` (created on first use, found again in backward). Its
  // path is "<path>.<name>"; a name starting with '#' keeps the parent's path (an
  // internal sub-region that records under its parent). Same enabled/recompute flags.
  SaveContext& child(const std::string& name);
  // A fresh child (replacing any old one of that name) that saves for real even if
  // this one is disabled: the context a recompute saves into.
  SaveContext& child_for_recompute(const std::string& name);
  // A fresh child that saves nothing: the no-grad forward of a checkpoint.
  SaveContext& child_no_grad(const std::string& name);

  template <typename T> void stash(StashKey<T> key, T value) { stash_[key.name] = std::move(value); }
  template <typename T> T& stashed(StashKey<T> key) {
    auto it = stash_.find(key.name);
    RCTS_CHECK(it != stash_.end(), "context '" + path_ + "' has nothing stashed under '" + key.name + "'");
    return *std::any_cast<T>(&it->second);
  }
  template <typename T> bool has_stash(StashKey<T> key) const { return stash_.count(key.name) != 0; }

  // Drops everything this context and its children keep (end of backward).
  void clear();

 private:
  SaveContext& fresh_child(const std::string& name, bool enabled, bool recompute);

  std::string path_;
  SaveLog* log_;
  bool enabled_;
  bool recompute_;
  std::map<std::string, PackedTensor> saved_;
  std::map<std::string, std::unique_ptr<SaveContext>> children_;
  std::map<std::string, std::any> stash_;
};

}  // namespace rcts
