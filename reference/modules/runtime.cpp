#include "reference/modules/runtime.hpp"

#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {

void Counters::count_forward(const std::string& module_path) {
  auto& c = forwards_[module_path];
  if (is_recomputing()) ++c.recompute;
  else ++c.original;
}

ForwardCount Counters::get(const std::string& module_path) const {
  auto it = forwards_.find(module_path);
  return it == forwards_.end() ? ForwardCount{} : it->second;
}

void Runtime::add_side_effect(const std::string& key, double value) {
  // A recompute replays the forward; its side effects were already applied.
  if (is_recomputing() && !fault_on(Fault::side_effect_twice)) return;
  side_effects[key] += value;
}

uint64_t fnv1a64(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace rcts
