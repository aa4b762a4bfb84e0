// execute(): run one configuration end to end on a fresh Runtime over a backend and
// keep everything the checks compare — losses, inputs, outputs, input and parameter
// gradients, parameters, RNG states after every micro-batch, the dropout-mask log,
// module counters, side effects, saved bytes per layer and memory peaks. Tensors are
// copied out of the run's tracked (device) memory into host memory, so the record
// outlives the Runtime and the harness can read it on any backend.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reference/core/memory_timeline.hpp"
#include "reference/driver/model.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts {

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

struct RunRecord {
  Config config;
  std::string backend;                         // Backend::name() of the run
  RankCoords coords;
  std::vector<Segment> plan;
  RngStates rng_initial;
  std::vector<double> losses;                  // per (step, micro-batch), in run order
  std::vector<Tensor> inputs, outputs, input_grads;  // per (step, micro-batch)
  std::vector<RngStates> rng_after;            // per (step, micro-batch)
  std::vector<std::vector<int64_t>> saved_bytes_per_layer;  // per (step, micro-batch)
  std::vector<NamedTensor> params, grads;      // final values; last step's accumulated grads
  std::vector<MaskRecord> masks;
  std::map<std::string, ForwardCount> counts;
  std::map<std::string, double> side_effects;
  std::vector<SaveRecord> saves;               // the first micro-batch's save log
  std::vector<int64_t> saved_after_forward, host_resident_after_forward;  // per (step, micro-batch)
  std::optional<OffloadReport> offload;         // when offload is on
  int64_t device_peak = 0;                     // over the whole run, all categories
  int64_t saved_peak = 0;                      // max of saved_peaks
  std::vector<int64_t> saved_peaks;            // peak of saved_activation + checkpoint_input, per (step, micro-batch)
  int64_t workspace_peak = 0;                  // op scratch held at once (device, category workspace)
  std::optional<int64_t> device_pool_high_water;  // the backend pool's own figure over the same span, if it has one
  std::vector<int64_t> workspace_heap_allocations;  // the pool's heap allocations so far, per (step, micro-batch)
  // Held-for-backward bytes over the run, marks per micro-batch, offload copies (the
  // run report's pictures; observed, never compared).
  TimelineRecord timeline;
  int micro_batches_total() const { return static_cast<int>(losses.size()); }
};

// `coords` are the rank coordinates the RNG is seeded for; `groups` (optional) are
// this rank's process groups in a multi-rank run (the world of one otherwise).
RunRecord execute(const Config& config, Backend& backend, RankCoords coords = {},
                  const ProcessGroups* groups = nullptr);

}  // namespace rcts
