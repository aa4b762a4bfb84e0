// LayerNorm over the hidden dimension. Saves only its input; the statistics are
// recomputed in backward (Korthikanti et al. count no LN statistics).
#pragma once
#include "reference/modules/module.hpp"

namespace rcts {

class LayerNorm final : public Module {
 public:
  LayerNorm(Runtime& rt, std::string path, int64_t hidden);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // x (tokens, h) -> (tokens, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;

 private:
  Runtime& rt_;
  std::string path_;
  int64_t hidden_;
  Parameter weight_, bias_;
};

}  // namespace rcts
