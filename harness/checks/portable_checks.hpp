// The implementation-independent parts of the rng, masks and offload checks, for runs
// read from dumps that do not declare rcts's rules (docs/dump-format.md, "Checks over
// dumps"). checks.cpp hands a run to these when its record says so; rcts's own runs
// never reach them.
#pragma once
#include <optional>
#include <string>

#include "harness/results/result.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::harness {

// The forward draws of `run` against the baseline's, in order (site and mask bits, and
// with `same_offsets` the Philox offset too): why they differ, or nullopt. Shared by the
// masks check under rcts's rule and the portable one.
std::optional<std::string> forward_draws_differ(const RunRecord& base, const RunRecord& run, bool same_offsets);

// Opaque generator states (a digest of each generator's state bytes): after every
// micro-batch every generator's state equals the baseline's. Seeds are not judged.
CheckResult check_rng_opaque(const RunRecord& base, const RunRecord& run, const std::string& label);

// Masks without rcts's Philox rule: every recompute draw equals the latest forward
// draw of its site in the same step and micro-batch (same shape, rate and bits), and
// the forward draws equal the baseline's in order, and no site's forward draw repeats
// another micro-batch's mask where a chance repeat is improbable (< 1e-12). With (seed, offset) states the
// stream and seed of each draw are also held to design §5.
CheckResult check_masks_portable(const RunRecord& base, const RunRecord& run, const std::string& label);

// Offload by another mechanism (no rcts offload report): every micro-batch reloads
// what it offloaded, some bytes left the device, and at the end of every forward the
// device bytes plus the host-resident bytes equal the device bytes of the same run
// without offload.
CheckResult check_offload_portable(const RunRecord& same_without_offload, const RunRecord& run,
                                   const std::string& label);

}  // namespace rcts::harness
