// Saved-tensor hooks (design §4), like torch.autograd.graph.saved_tensors_hooks:
// a thread-local stack of (pack, unpack) pairs. SaveContext::save packs through the
// innermost hooks; load unpacks through the hooks that packed. Offload pushes its
// hooks to move saved activations to host and back.
#pragma once
#include <any>
#include <memory>
#include <string>

#include "reference/core/tensor.hpp"

namespace rcts {

struct SaveInfo {
  std::string module_path;  // e.g. "layers.0.attention"
  std::string tensor;       // e.g. "q"
  Category category;        // saved_activation or checkpoint_input
};

class SavedTensorHooks;

// What a SaveContext keeps for one saved tensor. Without hooks `tensor` is the
// saved tensor itself; hooks may keep an undefined tensor and a tag instead.
struct PackedTensor {
  Tensor tensor;
  std::any tag;
  SavedTensorHooks* packer = nullptr;
  SaveInfo info;
};

class SavedTensorHooks {
 public:
  virtual ~SavedTensorHooks() = default;
  virtual PackedTensor pack(const Tensor& t, const SaveInfo& info) = 0;
  virtual Tensor unpack(PackedTensor& p) = 0;
};

// RAII: pushes hooks on this thread's stack for the scope's lifetime.
class SavedTensorHooksScope {
 public:
  explicit SavedTensorHooksScope(SavedTensorHooks& hooks);
  ~SavedTensorHooksScope();
  SavedTensorHooksScope(const SavedTensorHooksScope&) = delete;
  SavedTensorHooksScope& operator=(const SavedTensorHooksScope&) = delete;

 private:
  SavedTensorHooks* hooks_;
};

// Innermost hooks of this thread, or null.
SavedTensorHooks* current_saved_tensor_hooks();

}  // namespace rcts
