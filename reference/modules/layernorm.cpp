#include "reference/modules/layernorm.hpp"

#include "reference/runtime/compute.hpp"

namespace rcts {

LayerNorm::LayerNorm(Runtime& rt, std::string path, int64_t hidden)
    : rt_(rt),
      path_(std::move(path)),
      hidden_(hidden),
      weight_(make_parameter(rt, path_ + ".weight", {hidden}, Init::ones_jitter)),
      bias_(make_parameter(rt, path_ + ".bias", {hidden}, Init::zeros_jitter)) {
  weight_.sequence_parallel = bias_.sequence_parallel = rt.config.parallel.sequence_parallel;
}

Tensor LayerNorm::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  ctx.save(x, "input");
  Tensor y = rt_.activation(x.shape(), path_ + ".output");
  const int64_t rows = x.numel() / hidden_;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> xv(rt_, x);
    ComputeOut<T> yv(rt_, y);
    rt_.ops<T>().layernorm_forward(yv.data(), xv.data(), param_data<T>(weight_.value), param_data<T>(bias_.value), rows,
                           hidden_, rt_.config.model.layernorm_epsilon);
    yv.commit();
  });
  return y;
}

Tensor LayerNorm::backward(SaveContext& ctx, const Tensor& dy) {
  Tensor x = ctx.load("input");
  Tensor dx = rt_.activation(x.shape(), path_ + ".input.grad");
  const int64_t rows = x.numel() / hidden_;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> xv(rt_, x);
    const ComputeIn<T> dyv(rt_, dy);
    ComputeOut<T> dxv(rt_, dx);
    rt_.ops<T>().layernorm_backward(dxv.data(), param_data<T>(weight_.grad), param_data<T>(bias_.grad), dyv.data(),
                            xv.data(), param_data<T>(weight_.value), rows, hidden_,
                            rt_.config.model.layernorm_epsilon);
    dxv.commit();
  });
  return dx;
}

void LayerNorm::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight_);
  out.push_back(&bias_);
}

}  // namespace rcts
