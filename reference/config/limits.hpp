// Every resource limit rcts enforces, in one place (documented in cases/README.md
// "Limits" and in `rcts run --help`). Three kinds:
//   - JSON input: nesting depth and file size of anything rcts parses;
//   - config properties, checked as validation rules with codes (validate.cpp):
//     layers, micro-batches, steps, link-model bounds;
//   - run estimates (memory_model/run_estimate.hpp), checked before a config runs:
//     bytes, work and link-model sleep time. These have CLI overrides.
// The config limits bound what the analytic model and `explain` iterate over; the
// run estimates bound what a run allocates and how long it takes.
#pragma once
#include <cstdint>

namespace rcts::limits {

// JSON input (harness/io/strict_json.hpp). The case schema nests 5 levels deep.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr int64_t kMaxJsonFileBytes = int64_t{64} << 20;  // 64 MiB (goldens are ~100 KiB)

// Dumps read by `rcts check` (harness/dumps/dump_reader.cpp, npy.cpp), checked before any
// tensor byte is read or allocated.
inline constexpr int64_t kMaxNpyHeaderBytes = 10000;              // numpy's own max_header_size
inline constexpr int kMaxTensorDims = 32;                         // numpy 1.x's NPY_MAXDIMS
inline constexpr int64_t kMaxDumpTensorBytes = int64_t{8} << 30;  // one tensor: the default run bytes
inline constexpr int kMaxDumps = 10000;                           // dump.json files below the check's directories
inline constexpr int64_t kMaxDumpDirEntries = 1000000;            // entries walked to find them

// Megatron-LM argument text and files (harness/megatron/megatron_args.cpp, megatron_yaml.cpp).
inline constexpr int64_t kMaxMegatronTextBytes = int64_t{1} << 20;  // 1 MiB: launch scripts are a few KiB
inline constexpr int kMaxMegatronArgs = 4096;
inline constexpr int kMaxYamlDepth = 16;                            // MODEL_ARGS, then a list

// Config properties (rule codes model.num_layers_limit, run.limit, offload.link_bounds).
inline constexpr int kMaxLayers = 1024;              // model.num_layers, per pipeline stage
inline constexpr int kMaxMicroBatches = 1 << 16;     // run.micro_batches
inline constexpr int kMaxSteps = 1 << 16;            // run.steps
inline constexpr int kMaxAmaxHistory = 4096;         // model.fp8_amax_history_len (rule fp8.amax_history_range)
inline constexpr int kMaxFp8Margin = 32;             // model.fp8_margin: scale / 2^margin stays a normal float
// The link model sleeps latency + bytes / bandwidth per copy (offload/copy_stream).
inline constexpr double kMinLinkBandwidthGbps = 0.01;  // 10 MB/s; 0 still means strict streams
inline constexpr double kMaxLinkLatencyUs = 1e5;       // 0.1 s per copy

// Run estimates: defaults, overridable with `rcts run --max-bytes / --max-work /
// --max-link-seconds` (also explain, block, mutants).
inline constexpr double kDefaultMaxRunBytes = 8.0 * (int64_t{1} << 30);  // 8 GiB
inline constexpr double kDefaultMaxRunWork = 4e12;                       // FLOP (a few minutes here)
inline constexpr double kDefaultMaxLinkSeconds = 60.0;
// Work floor of one layer's forward + backward on one micro-batch: per-op costs
// (allocation, dispatch, RNG, logging) that FLOPs do not count on tiny shapes.
inline constexpr double kMinLayerPassWork = 1e6;

}  // namespace rcts::limits
