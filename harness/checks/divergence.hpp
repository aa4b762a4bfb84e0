// Failures that point at the cause: where a run first departs from its
// baseline (or from the oracles of design §5) in execution order, and the reason a
// failing case gives. A recompute that draws a mask from the wrong offset breaks every
// later gradient; its report must lead with the draw (step, micro-batch, forward or
// recompute, stream, seed, offset), not with the first differing gradient.
//
// Execution order is ExecPoint order (report.hpp). The mask log records the micro-batch
// within its step only; a draw's step is counted from the baseline's forward draws per
// micro-batch (every micro-batch of a config draws the same sites), and a recompute draw
// belongs to the micro-batch of the latest forward draw (backward follows each forward).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/results/result.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::harness {

struct Divergence {
  ExecPoint at;
  std::string what;  // one line
};

// Dropout draws: each forward draw against the baseline's draw at the same position
// (site, stream, seed, offset, mask) and against design §5's seed for its stream; each
// recompute draw against the latest forward draw of its site, which it must replay.
std::optional<Divergence> mask_divergence(const RunRecord& base, const RunRecord& run);
// RNG: tracker seeds against design §5, then the states after every micro-batch.
std::optional<Divergence> rng_divergence(const RunRecord& base, const RunRecord& run);
// Values: per micro-batch the block output, the loss and the input gradient; then
// parameter gradients, parameters and side effects.
std::optional<Divergence> value_divergence(const RunRecord& base, const RunRecord& run);
// The earliest of the three.
std::optional<Divergence> first_divergence(const RunRecord& base, const RunRecord& run);

// After a run's checks: sets `at` on the failing checks in checks[from, end) from what
// their kind compares (masks: draws, rng: RNG states, bitwise: values), and when any
// failed, records the run's first divergence under `label` in `firsts`.
void place_failures(const RunRecord& base, const RunRecord& run, const std::string& label,
                    std::vector<CheckResult>& checks, size_t from,
                    std::vector<std::pair<std::string, Divergence>>& firsts);

// The reason of a failing case: "first divergence (<label>): <point>: <what>" for the
// earliest of `firsts` (if any), then every failing check as "<kind>: <detail>",
// ordered by `at` (checks without one after those with, each group in run order).
std::string failure_reason(const std::vector<std::pair<std::string, Divergence>>& firsts,
                           const std::vector<CheckResult>& checks);

// A multi-rank case's merged reason: one rank's reason is kept whole, so the first
// divergence another rank found (e.g. a seed only rank 1 gets wrong) would be lost.
// Returns `merged` led by every rank's first-divergence line, "rank <r>: first
// divergence ...", in rank order, with those lines removed from the rest.
std::string lead_with_rank_divergences(const std::vector<CaseResult>& per_rank, const std::string& merged);

}  // namespace rcts::harness
