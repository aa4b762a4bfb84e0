// execute(): run one configuration end to end on a fresh Runtime over a backend and
// keep everything the checks compare — losses, inputs, outputs, input and parameter
// gradients, parameters, RNG states after every micro-batch, the dropout-mask log,
// module counters, side effects, saved bytes per layer and memory peaks. Tensors are
// copied out of the run's tracked (device) memory into host memory, so the record
// outlives the Runtime and the harness can read it on any backend.
#pragma once
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reference/config/validate.hpp"
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
  // Under pipeline parallelism (design §16) a rank records its stage: inputs are what
  // it received (stage 0: the data), outputs its block output (the last stage: what
  // the loss sees), input_grads what it sends back, params/grads/masks/counts/saves
  // its own layers; losses are empty on every stage but the last.
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

  // Recorded only with ExecuteOptions::record_all (dumps, docs/dump-format.md):
  std::vector<Tensor> targets;                                   // per (step, micro-batch)
  std::vector<std::vector<NamedTensor>> grads_after_micro_batch;  // per (step, micro-batch): accumulated so far
  std::vector<std::vector<NamedTensor>> params_before_step;       // per step
  std::vector<std::vector<NamedTensor>> grads_of_step;            // per step, after the step's reductions
  std::vector<std::vector<SaveRecord>> saves_per_micro_batch;     // per (step, micro-batch); masks keep their bytes

  // Who produced the record. execute() is rcts: its arithmetic, (seed, offset) generator
  // states under Megatron's stream names, masks by rcts's Philox rule. A record read
  // from another implementation's dump (harness/dumps/dump_v1.hpp) declares its own, and
  // the checks that need rcts's rules run only when it declares them.
  std::string implementation = "rcts";
  bool rcts_arithmetic = true;   // golden digests apply
  bool seed_offset_rng = true;   // rng_initial / rng_after hold (seed, offset) states
  bool rcts_mask_rule = true;    // masks regenerate from (seed, offset, p) under rcts's Philox rule
  // Per (step, micro-batch), generator name -> sha256 of its state bytes, when
  // !seed_offset_rng (e.g. PyTorch's Mersenne Twister).
  std::vector<std::map<std::string, std::string>> rng_after_opaque;
  // Optional fields the implementation did not record (e.g. "counts", "memory.saved_peak").
  std::set<std::string> not_recorded;
  // Those a dump declares under "not_recorded", with the writer's reason (e.g. a side
  // effect only the adapter's own driver could have counted).
  std::map<std::string, std::string> not_recorded_why;
  // Offload by a mechanism other than rcts's offload manager (no OffloadReport): bytes
  // moved off the device and back, per (step, micro-batch).
  std::vector<int64_t> offloaded_bytes, reloaded_bytes;
  // Saved-tensor accounting a dump declares (docs/dump-format.md): the profile its writer
  // ran under ("" : rcts's own, Korthikanti's tensors), each save's op, dtype and shape
  // (parallel to saves_per_micro_batch; empty when the dump gives none), and the tensors
  // still held once each micro-batch's backward ended.
  struct SaveShape {
    std::string op, dtype;
    std::vector<int64_t> shape;
  };
  std::string memory_profile;
  std::vector<std::vector<SaveShape>> save_shapes_per_micro_batch;
  std::vector<std::vector<SaveRecord>> held_after_backward;
  std::vector<std::vector<SaveShape>> held_after_backward_shapes;

  // Micro-batches of the run: every stage records rng_after and inputs, only the last
  // pipeline stage losses (design §16).
  int micro_batches_total() const {
    return static_cast<int>(std::max({losses.size(), rng_after.size(), inputs.size(), rng_after_opaque.size()}));
  }
};

struct ExecuteOptions {
  // Also record targets, per-micro-batch gradients, parameters before each step, every
  // micro-batch's save log and every mask's bytes (what a dump holds). Off for plain
  // runs, which do not pay for the copies.
  bool record_all = false;
};

// What the reference model runs on `backend`: the default feature gate, plus
// model.flash_attention where the backend has a fused attention (design §11).
Supported supported_on(Backend& backend);

// `coords` are the rank coordinates the RNG is seeded for; `groups` (optional) are
// this rank's process groups in a multi-rank run (the world of one otherwise).
RunRecord execute(const Config& config, Backend& backend, RankCoords coords = {},
                  const ProcessGroups* groups = nullptr, const ExecuteOptions& options = {});

}  // namespace rcts
