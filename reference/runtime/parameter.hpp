// Parameters and their gradients (f32; f64 in gradcheck runs), initialised from a
// counter-based stream keyed by (seed, parameter name), so every run, rank and
// backend builds identical values without consuming any generator.
#pragma once
#include <string>
#include <vector>

#include "reference/runtime/runtime.hpp"

namespace rcts {

struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;  // accumulates (+=) over micro-batches
  // Replicated across TP but computed from a sequence shard (layernorms under
  // sequence parallelism): its gradient is all-reduced over TP once per step.
  bool sequence_parallel = false;
};

enum class Init { uniform_fan_in, ones_jitter, zeros_jitter };

// Allocates value and zeroed grad; value[i] is drawn from Philox keyed by
// (seed, fnv1a64(name)) at element i, mapped to [-1, 1) and scaled per `init`.
Parameter make_parameter(Runtime& rt, const std::string& name, const Shape& shape, Init init, int64_t fan_in = 1);

// A tensor-parallel shard of a parameter whose full shape is `full`: the full
// values are drawn exactly as make_parameter would, then rows `rows` (dimension 0)
// and, for 2-D parameters, columns `cols` are kept. Empty lists keep everything.
using Ranges = std::vector<std::pair<int64_t, int64_t>>;
Parameter make_parameter_slice(Runtime& rt, const std::string& name, const Shape& full, const Ranges& rows,
                               const Ranges& cols, Init init, int64_t fan_in = 1);

// Fills `t` with values in [-scale, scale) from the stream keyed by (seed, key).
void fill_uniform(Tensor& t, uint64_t seed, const std::string& key, double scale);

void zero_grads(std::vector<Parameter*>& params);

}  // namespace rcts
