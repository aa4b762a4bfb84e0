// Module: a Region with one input and one output, plus parameters. Explicit
// forward/backward (llm.c style): forward saves what backward needs in the
// module's own SaveContext; backward writes the input gradient (=) and
// accumulates parameter gradients (+=).
#pragma once
#include <string>
#include <vector>

#include "reference/runtime/parameter.hpp"
#include "reference/recompute/region.hpp"

namespace rcts {

class Module : public Region {
 public:
  virtual Tensor forward(SaveContext& ctx, const Tensor& x) = 0;
  virtual Tensor backward(SaveContext& ctx, const Tensor& dy) = 0;
  virtual void parameters(std::vector<Parameter*>& out) { (void)out; }

  std::vector<std::string> input_names() const override { return {"input"}; }
  std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& in) override {
    return {forward(ctx, in.at(0))};
  }
  std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) override {
    return {backward(ctx, dout.at(0))};
  }
};

}  // namespace rcts
