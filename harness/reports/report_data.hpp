// What `rcts run --report DIR` draws, taken from the records a run already keeps
// (RunRecord: saved bytes per layer, the first micro-batch's save log, the memory
// timeline, the offload copies) beside the analytic memory model's figures for the
// same config. One RunPicture per run (baseline or variant) and rank; it serialises
// to JSON so a multi-rank run can gather every rank's pictures on rank 0.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/driver/execute.hpp"

namespace rcts::harness {

// Saved bytes of one module kind over all layers, e.g. "attention.softmax".
struct ModuleBytes {
  std::string module;
  int64_t measured = 0;               // 0: the run saved nothing the log attributes to it
  std::optional<int64_t> model;       // the analytic model's figure, when it covers the config
};

struct RunPicture {
  std::string label;  // "baseline" or the variant's name
  int rank = 0;
  std::string summary;  // recompute / offload settings in a few words
  std::vector<int64_t> layer_measured;  // first micro-batch, per layer
  std::vector<int64_t> layer_model;     // empty when the model does not cover the config
  std::string model_note;               // why not, or why the peak is not modelled
  std::vector<ModuleBytes> modules;     // in first-saved order
  std::optional<int64_t> model_peak;    // backward peak of saved + checkpoint-input bytes
  std::vector<int64_t> measured_peaks;  // per (step, micro-batch)
  bool offload = false;
  TimelineRecord timeline;              // samples downsampled to at most 2 * kMaxTimelinePoints
};

inline constexpr size_t kMaxTimelinePoints = 2000;

// "layers.3.attention.q" -> "attention"; "layers.0.mlp.fc1.input" -> "mlp.fc1": the
// module that saved the tensor, without its layer.
std::string module_of(const std::string& save_key);

// The figures of one run. Per-module measured bytes count each view (storage, offset)
// once (two saves of one view are held once), attributed to its first save in forward.
RunPicture picture_of(const RunRecord& r, const std::string& label, int rank);

// At most 2 * `points` samples: per bucket of consecutive samples the one with the
// most device bytes and the one with the most host bytes, in order, so every peak
// survives. Marks keep their seq.
std::vector<TimelineSample> downsample(const std::vector<TimelineSample>& s, size_t points);

// The device bytes at the sample a mark points at (the last sample before it), 0
// before the first sample.
int64_t device_at(const TimelineRecord& t, int64_t seq);
int64_t host_at(const TimelineRecord& t, int64_t seq);

nlohmann::json to_json(const RunPicture& p);
RunPicture picture_from_json(const nlohmann::json& j);

}  // namespace rcts::harness
