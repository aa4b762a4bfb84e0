// The checks a case can ask for (design §10). Each compares a run with its baseline
// or with an independent oracle (the seed formula of design §5, the dropout rule,
// the analytic memory model) and says exactly what differs.
#pragma once
#include <filesystem>
#include <string>

#include "harness/cases/case.hpp"
#include "harness/results/result.hpp"

namespace rcts::harness {

// Loss, outputs, input gradients, parameters, parameter gradients and side effects
// bit for bit.
CheckResult check_bitwise(const RunRecord& base, const RunRecord& run, const std::string& label);
// RNG states after every micro-batch equal the baseline's; the initial tracker
// seeds equal design §5's formula for the run's rank coordinates.
CheckResult check_rng(const RunRecord& base, const RunRecord& run, const std::string& label);
// Every mask was drawn with the expected seed for its stream, regenerates from its
// (seed, offset) under the harness's own Philox and dropout rule (mask_oracle.hpp),
// every stream is drawn contiguously from block 0 and ends where the generator
// stands, recompute draws replay their forward, and the forward draws equal the
// baseline's.
CheckResult check_masks(const RunRecord& base, const RunRecord& run, const std::string& label);
CheckResult check_memory(const MemoryExpect& expect, const RunRecord& base, const RunRecord& run,
                         const std::string& label);
CheckResult check_counts(const std::vector<CountExpect>& expect, const RunRecord& run, const std::string& label);

// Offload invariants (design §9): offloaded == reloaded per group name; only tensors
// of >= min_offloaded_tensor_size elements moved; warmup moved nothing; every
// expected group formed in every micro-batch after warmup, the first-in-backward group
// of each name stayed on device and every other group moved its eligible bytes; a
// module moved nothing only when all it saved is recomputed or a parameter
// (offload_invariants.hpp); the host pool did not grow after the first offloading
// iteration; and at the end
// of every forward, device bytes held for backward + bytes resident on the host
// equal the device bytes of the same config without offload (strict streams). The detail reports bytes
// moved, exposed wait and device peaks with and without offload.
// `same_without_offload` is the run's own config with offload switched off.
CheckResult check_offload(const RunRecord& same_without_offload, const RunRecord& run, const std::string& label);

// The seed design §5 assigns to a stream on a rank (the oracle, written from the
// table, independent of reference/rng).
// The stream a dropout site of `site_kind` must draw from (design §5): attention ->
// model-parallel-rng; hidden -> device-default, or model-parallel-rng under sequence
// parallelism; expert -> expert-parallel-rng.
std::string expected_stream(const std::string& site_kind, const Config& c);
uint64_t expected_stream_seed(const std::string& stream, uint64_t seed, const RankCoords& r);

}  // namespace rcts::harness
