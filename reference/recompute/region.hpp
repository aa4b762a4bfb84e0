// Region: a piece of forward computation that checkpointing can run twice — once
// without saving (forward) and again with saving (recompute in backward) — and
// then differentiate. Modules, core attention, the MLP and chunks of layers are
// regions. Inputs and outputs are lists so core attention (q, k, v) fits.
#pragma once
#include <string>
#include <vector>

#include "reference/core/save_context.hpp"

namespace rcts {

class Region {
 public:
  virtual ~Region() = default;
  // Names under which a checkpoint saves the inputs (one per input).
  virtual std::vector<std::string> input_names() const = 0;
  virtual std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& in) = 0;
  // Gradients of the inputs from gradients of the outputs; reads what forward saved in ctx.
  virtual std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) = 0;
};

}  // namespace rcts
