#include "reference/core/save_context.hpp"

namespace rcts {

SaveContext::SaveContext(std::string path, SaveLog* log, bool enabled, bool recompute)
    : path_(std::move(path)), log_(log), enabled_(enabled), recompute_(recompute) {}

void SaveContext::save(const Tensor& t, const std::string& tensor_name, Category category) {
  if (!enabled_) return;
  RCTS_CHECK(t.defined(), "context '" + path_ + "': saving undefined tensor '" + tensor_name + "'");
  RCTS_CHECK(!saved_.count(tensor_name), "context '" + path_ + "': a tensor named '" + tensor_name +
                                             "' was already saved in this invocation");
  SaveInfo info{path_, tensor_name, category};
  t.storage()->retag(category);
  if (log_) log_->add({path_, tensor_name, t.nbytes(), category, t.storage()->id(), t.offset(), recompute_});
  PackedTensor p;
  if (auto* hooks = current_saved_tensor_hooks()) {
    p = hooks->pack(t, info);
    p.packer = hooks;
  } else {
    p.tensor = t;
  }
  p.info = std::move(info);
  saved_.emplace(tensor_name, std::move(p));
}

Tensor SaveContext::load(const std::string& tensor_name) {
  RCTS_CHECK(enabled_, "context '" + path_ + "' is a no-grad context: nothing was saved for backward");
  auto it = saved_.find(tensor_name);
  if (it == saved_.end()) {
    std::string held;
    for (const auto& [name, p] : saved_) held += (held.empty() ? "" : ", ") + name;
    throw Error("context '" + path_ + "': no saved tensor '" + tensor_name + "' (it holds: " +
                (held.empty() ? std::string("nothing; was it cleared by an earlier backward?") : held) + ")");
  }
  PackedTensor& p = it->second;
  return p.packer ? p.packer->unpack(p) : p.tensor;
}

bool SaveContext::has_saved(const std::string& tensor_name) const { return saved_.count(tensor_name) != 0; }

SaveContext& SaveContext::fresh_child(const std::string& name, bool enabled, bool recompute) {
  std::string path = (!name.empty() && name[0] == '#') ? path_ : (path_.empty() ? name : path_ + "." + name);
  auto& slot = children_[name];
  slot = std::make_unique<SaveContext>(std::move(path), log_, enabled, recompute);
  return *slot;
}

SaveContext& SaveContext::child(const std::string& name) {
  auto it = children_.find(name);
  if (it != children_.end()) return *it->second;
  return fresh_child(name, enabled_, recompute_);
}

SaveContext& SaveContext::child_for_recompute(const std::string& name) { return fresh_child(name, true, true); }

SaveContext& SaveContext::child_no_grad(const std::string& name) { return fresh_child(name, false, recompute_); }

void SaveContext::clear() {
  saved_.clear();
  children_.clear();
  stash_.clear();
}

}  // namespace rcts
