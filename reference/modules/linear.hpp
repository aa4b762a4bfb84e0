// Linear: y = x W^T + b with W (out, in). Saves its input. The GEMM order is the
// kernel's documented contract (kernels/cpu/gemm.hpp); the bias is added after the
// product, then the result is rounded once to the activation dtype.
#pragma once
#include "reference/modules/module.hpp"

namespace rcts {

class Linear final : public Module {
 public:
  Linear(Runtime& rt, std::string path, int64_t in_features, int64_t out_features, bool bias = true);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // x (tokens, in) -> (tokens, out)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override; // dW += dy^T x, db += sum dy
  void parameters(std::vector<Parameter*>& out) override;

 private:
  Runtime& rt_;
  std::string path_;
  int64_t in_, out_;
  bool has_bias_;
  Parameter weight_, bias_;
};

}  // namespace rcts
