// Checks of a pipeline-parallel run (design §16) that a pp = 1 run has no use for.
#pragma once
#include <optional>
#include <string>

#include "reference/driver/execute.hpp"

namespace rcts::harness {

// The stage's measured peak of bytes held for backward (saved activations +
// checkpoint inputs) over the whole 1F1B schedule — the run's memory timeline —
// against the analytic model's in-flight peak for this stage,
// (P - 1) · stored + backward peak with P = min(pp - pp_rank, micro_batches).
// nullopt when they agree, else both figures and P.
std::optional<std::string> pipeline_peak_differs(const RunRecord& run);

}  // namespace rcts::harness
