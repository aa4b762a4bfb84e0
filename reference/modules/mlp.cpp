#include "reference/modules/mlp.hpp"

#include "reference/runtime/compute.hpp"

namespace rcts {

Activation::Activation(Runtime& rt, std::string path, bool swiglu) : rt_(rt), path_(std::move(path)), swiglu_(swiglu) {}

Tensor Activation::forward(SaveContext& ctx, const Tensor& x) {
  ctx.save(x, "input");
  const int64_t rows = x.dim(0), width = x.dim(1), f = swiglu_ ? width / 2 : width;
  Tensor y = rt_.activation({rows, f}, path_ + ".output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& k = rt_.ops<T>();
    const ComputeIn<T> xv(rt_, x);
    ComputeOut<T> yv(rt_, y);
    if (swiglu_) k.swiglu_forward(yv.data(), xv.data(), rows, f);
    else k.gelu_forward(yv.data(), xv.data(), rows * f);
    yv.commit();
  });
  return y;
}

Tensor Activation::backward(SaveContext& ctx, const Tensor& dy) {
  Tensor x = ctx.load("input");
  const int64_t rows = x.dim(0), width = x.dim(1), f = swiglu_ ? width / 2 : width;
  Tensor dx = rt_.activation(x.shape(), path_ + ".input.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& k = rt_.ops<T>();
    const ComputeIn<T> xv(rt_, x), dyv(rt_, dy);
    ComputeOut<T> dxv(rt_, dx);
    if (swiglu_) k.swiglu_backward(dxv.data(), dyv.data(), xv.data(), rows, f);
    else k.gelu_backward(dxv.data(), dyv.data(), xv.data(), rows * f);
    dxv.commit();
  });
  return dx;
}

namespace {
bool is_swiglu(const Runtime& rt) { return rt.config.model.activation == "swiglu"; }
}  // namespace

namespace {
int64_t width(const Runtime& rt, int64_t intermediate) {
  return intermediate < 0 ? int64_t{rt.config.model.ffn_hidden_size} : intermediate;
}
}  // namespace

Mlp::Mlp(Runtime& rt, std::string path, int64_t intermediate, bool bias)
    : rt_(rt),
      path_(std::move(path)),
      fc1_(rt, path_ + ".fc1",
           {rt.config.model.hidden_size, (is_swiglu(rt) ? 2 : 1) * width(rt, intermediate), bias, TpMode::column,
            is_swiglu(rt) ? 2 : 1}),
      act_(rt, path_ + ".act", is_swiglu(rt)),
      fc2_(rt, path_ + ".fc2", {width(rt, intermediate), rt.config.model.hidden_size, bias, TpMode::row, 1}) {}

Tensor Mlp::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  Tensor a = fc1_.forward(ctx.child("fc1"), x);
  Tensor g = act_.forward(ctx.child("act"), a);
  return fc2_.forward(ctx.child("fc2"), g);
}

Tensor Mlp::backward(SaveContext& ctx, const Tensor& dy) {
  Tensor dg = fc2_.backward(ctx.child("fc2"), dy);
  Tensor da = act_.backward(ctx.child("act"), dg);
  return fc1_.backward(ctx.child("fc1"), da);
}

void Mlp::parameters(std::vector<Parameter*>& out) {
  fc1_.parameters(out);
  fc2_.parameters(out);
}

}  // namespace rcts
