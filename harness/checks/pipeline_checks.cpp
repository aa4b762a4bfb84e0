#include "harness/checks/pipeline_checks.hpp"

#include <algorithm>

#include "reference/memory_model/activation_memory.hpp"

namespace rcts::harness {

std::optional<std::string> pipeline_peak_differs(const RunRecord& run) {
  if (run.timeline.truncated) return "the run's memory timeline is truncated: the in-flight peak cannot be measured";
  int64_t measured = 0;  // no sample: nothing was ever held for backward (eval)
  for (const auto& s : run.timeline.samples) measured = std::max(measured, s.device_bytes);
  const StageMemory st = stage_memory(run.config, run.coords.pp);
  if (measured == st.peak_in_flight_bytes) return std::nullopt;
  return "pipeline stage " + std::to_string(run.coords.pp) + " held at most " + std::to_string(measured) +
         " bytes for backward over the 1F1B schedule, the analytic model says " +
         std::to_string(st.peak_in_flight_bytes) + " = (" + std::to_string(st.in_flight) + " - 1) x " +
         std::to_string(st.stored_bytes) + " stored + backward peak " + std::to_string(st.peak_backward_bytes) +
         " (" + std::to_string(st.in_flight) + " micro-batches in flight)";
}

}  // namespace rcts::harness
