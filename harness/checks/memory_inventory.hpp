// The memory check under a framework's saved-tensor profile
// (reference/memory_model/saved_profile.hpp): the tensors a dump says each layer saved,
// matched by dtype and shape against what the profile says the layer keeps, and the
// tensors a run still held once a backward ended.
#pragma once
#include <optional>
#include <string>

#include "reference/driver/execute.hpp"

namespace rcts::harness {

// Every micro-batch's per-layer inventory against run.memory_profile's model. nullopt
// and `detail` set when they agree; else the first difference: run, micro-batch, layer,
// the tensor (dtype, shape, bytes, op, module), both layers' byte counts and the profile
// row involved. A dump without shapes is compared by per-layer totals.
std::optional<std::string> inventory_differs(const RunRecord& run, const std::string& label, std::string& detail);
// The first tensor the run still held after a micro-batch's backward (held_after_backward).
std::optional<std::string> held_after_backward(const RunRecord& run, const std::string& label);

}  // namespace rcts::harness
