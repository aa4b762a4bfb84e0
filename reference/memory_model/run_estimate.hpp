// What running a config will cost, estimated before it runs, and the check that
// refuses a run over the limits (reference/config/limits.hpp). The estimate errs
// high: bytes cover parameters and gradients (and the run record's copies), every
// layer's activations with room for recompute and offload, the per-micro-batch
// record (inputs, outputs, input gradients, save and mask logs); work counts matmul
// FLOPs of forward, backward and recompute plus element-wise work, with a floor per
// layer pass; link seconds are what the offload link model sleeps. Computed in
// double, so no dimension overflows it.
#pragma once
#include <string>

#include "reference/config/config.hpp"
#include "reference/config/limits.hpp"

namespace rcts {

struct RunEstimate {
  double param_bytes = 0;       // parameters, gradients and their copies in the run record
  double activation_bytes = 0;  // peak of one micro-batch: saved tensors, recompute, scratch, host copies
  double record_bytes = 0;      // what the run record keeps per micro-batch, over the whole run
  double bytes = 0;             // the sum
  double work = 0;              // FLOP-equivalents
  double link_seconds = 0;      // offload link-model sleep time
};

struct RunLimits {
  double max_bytes = limits::kDefaultMaxRunBytes;
  double max_work = limits::kDefaultMaxRunWork;
  double max_link_seconds = limits::kDefaultMaxLinkSeconds;
};

// The config must be valid (validate()); invalid dimensions give meaningless numbers.
RunEstimate estimate_run(const Config& c);
// Throws rcts::Error naming `where` (the case and config label), the estimate and
// the limit it exceeds, and how to raise the limit.
void check_run_limits(const Config& c, const std::string& where, const RunLimits& limits = {});

}  // namespace rcts
