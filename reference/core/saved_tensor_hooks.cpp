#include "reference/core/saved_tensor_hooks.hpp"

#include <vector>

namespace rcts {

namespace {
thread_local std::vector<SavedTensorHooks*> hook_stack;
}

SavedTensorHooksScope::SavedTensorHooksScope(SavedTensorHooks& hooks) : hooks_(&hooks) {
  hook_stack.push_back(hooks_);
}

SavedTensorHooksScope::~SavedTensorHooksScope() {
  // Scopes nest strictly (RAII), so the top is ours.
  hook_stack.pop_back();
}

SavedTensorHooks* current_saved_tensor_hooks() { return hook_stack.empty() ? nullptr : hook_stack.back(); }

}  // namespace rcts
