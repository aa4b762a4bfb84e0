// MLP: fc1 -> activation (GeLU tanh form, or SwiGLU) -> fc2. Each op saves its
// input: fc1.input, act.input, fc2.input. Selective recompute "mlp" checkpoints the
// whole MLP (only fc1.input is kept). The activation is its own module so an
// output-discarding checkpoint can wrap it later (moe_act).
#pragma once
#include "reference/modules/linear.hpp"

namespace rcts {

class Activation final : public Module {
 public:
  Activation(Runtime& rt, std::string path, bool swiglu);
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // (tokens, f or 2f) -> (tokens, f)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;

 private:
  Runtime& rt_;
  std::string path_;
  bool swiglu_;
};

class Mlp final : public Module {
 public:
  // intermediate < 0: model.ffn_hidden_size. Shared experts use their own width, no bias.
  Mlp(Runtime& rt, std::string path, int64_t intermediate = -1, bool bias = true);
  using Module::backward;
  using Module::forward;
  std::vector<std::string> input_names() const override { return {"fc1.input"}; }
  Tensor forward(SaveContext& ctx, const Tensor& x) override;   // (tokens, h) -> (tokens, h)
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;

 private:
  Runtime& rt_;
  std::string path_;
  Linear fc1_;
  Activation act_;
  Linear fc2_;
};

}  // namespace rcts
