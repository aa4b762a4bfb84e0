// FP8 delayed scaling of the dense linear layers' forward inputs (design §12), the part
// of TransformerEngine's recipe that bears on recompute. Each site (a Linear's input)
// keeps an amax history and a scale:
//   forward    quantise-dequantise the GEMM input with the scale in effect (e4m3, both
//              for `e4m3` and `hybrid`, whose e5m2 half is for gradients), remember that
//              scale for a recompute, then record amax = max |x| at history[0] (older
//              entries move up one, the oldest drops) and recompute the scale from the
//              history: scale = (fp8_max / amax_ref) / 2^margin, amax_ref = history[0]
//              (most_recent) or max(history) (max); a zero or non-finite amax_ref, or
//              a scale that would overflow, keeps the old scale.
//   recompute  replays: uses the scale its own micro-batch's original forward used and
//              leaves history and scale untouched (TransformerEngine stashes the FP8 meta
//              tensors per forward for the recompute and restores them around it), so
//              recompute and its forward quantise identically and the history equals the
//              no-recompute run's. Under 1F1B a stage holds several micro-batches, so the
//              scale is remembered per (step, micro-batch), not once (design §16).
// The history and scale are published as run side effects
// ("<site>.fp8.amax_history.<i>", "<site>.fp8.scale"), so the bitwise and golden checks
// compare them. Backward stays in the activation dtype; the arithmetic runs on the host
// (kernels/exact/fp8.hpp) on every backend.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reference/config/config.hpp"
#include "reference/core/tensor.hpp"

namespace rcts {

struct Runtime;

class Fp8DelayedScaling {
 public:
  explicit Fp8DelayedScaling(const ModelConfig& m);
  // The tensor the forward GEMM of `site` reads in place of `x`.
  Tensor forward_input(Runtime& rt, const std::string& site, const Tensor& x);

  struct Site {
    std::vector<float> amax_history;  // [0] newest
    float scale = 1.0f;               // for the next original forward
    float forward_scale = 1.0f;       // what the latest original forward used
    std::map<std::pair<int, int>, float> forward_scales;  // (step, micro-batch) -> what its forward used
  };
  const std::map<std::string, Site>& sites() const { return sites_; }

 private:
  void record(Runtime& rt, const std::string& site, Site& s, float amax);
  int history_len_;
  bool use_max_;
  int margin_;
  std::map<std::string, Site> sites_;
};

// `x` itself unless the run uses FP8, else rt.fp8->forward_input(...).
Tensor fp8_forward_input(Runtime& rt, const std::string& site, const Tensor& x);

}  // namespace rcts
