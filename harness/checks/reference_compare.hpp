// `rcts check --reference-tolerance`: a dumped run next to rcts's own reference run of
// the same config, within a tolerance the user states. Not bitwise (other
// implementations round differently): per tensor the max absolute error and the
// relative error (max abs / max |reference|) are reported, and a tensor fails when
// max abs > atol + rtol * max |reference|. Compared: every micro-batch's loss, output
// and input gradient and every step's parameter gradients, each aggregated over its
// micro-batches or steps (the worst one is named).
#pragma once
#include <string>

#include "harness/results/result.hpp"
#include "reference/driver/execute.hpp"

namespace rcts::harness {

struct ReferenceTolerance {
  double rtol = 0;
  double atol = 0;
};

// One "reference" check result for `run` (labelled `label`). The reference must have
// been recorded with ExecuteOptions::record_all.
CheckResult compare_with_reference(const RunRecord& reference, const RunRecord& run, const ReferenceTolerance& tol,
                                   const std::string& label);

}  // namespace rcts::harness
