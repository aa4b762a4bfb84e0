#include "reference/modules/linear.hpp"

#include "kernels/cpu/gemm.hpp"
#include "reference/modules/compute.hpp"

namespace rcts {

using cpu::Trans;

Linear::Linear(Runtime& rt, std::string path, int64_t in_features, int64_t out_features, bool bias)
    : rt_(rt), path_(std::move(path)), in_(in_features), out_(out_features), has_bias_(bias),
      weight_(make_parameter(rt, path_ + ".weight", {out_features, in_features}, Init::uniform_fan_in, in_features)) {
  if (has_bias_) bias_ = make_parameter(rt, path_ + ".bias", {out_features}, Init::uniform_fan_in, in_features);
}

Tensor Linear::forward(SaveContext& ctx, const Tensor& x) {
  ctx.save(x, "input");
  const int64_t rows = x.numel() / in_;
  Tensor y = rt_.activation({rows, out_}, path_ + ".output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto xv = to_vector<T>(x);
    std::vector<T> yv(static_cast<size_t>(rows * out_));
    cpu::gemm<T>(Trans::N, Trans::T, rows, out_, in_, xv.data(), in_, param_data<T>(weight_.value), in_, yv.data(),
                 out_, false);
    if (has_bias_) {
      const T* b = param_data<T>(bias_.value);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out_; ++o) yv[static_cast<size_t>(r * out_ + o)] += b[o];
    }
    store(y, yv.data());
  });
  return y;
}

Tensor Linear::backward(SaveContext& ctx, const Tensor& dy) {
  Tensor x = ctx.load(0);
  const int64_t rows = x.numel() / in_;
  Tensor dx = rt_.activation(x.shape(), path_ + ".input.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto xv = to_vector<T>(x);
    auto dyv = to_vector<T>(dy);
    std::vector<T> dxv(xv.size());
    // dx (rows, in) = dy (rows, out) . W (out, in)
    cpu::gemm<T>(Trans::N, Trans::N, rows, in_, out_, dyv.data(), out_, param_data<T>(weight_.value), in_,
                 dxv.data(), in_, false);
    // dW (out, in) += dy^T (out, rows) . x (rows, in): the token reduction follows the GEMM's k order.
    cpu::gemm<T>(Trans::T, Trans::N, out_, in_, rows, dyv.data(), out_, xv.data(), in_,
                 param_data<T>(weight_.grad), in_, true);
    if (has_bias_) {
      // db += sum over tokens, in token order, column by column.
      T* db = param_data<T>(bias_.grad);
      for (int64_t o = 0; o < out_; ++o) {
        T acc = 0;
        for (int64_t r = 0; r < rows; ++r) acc += dyv[static_cast<size_t>(r * out_ + o)];
        db[o] += acc;
      }
    }
    store(dx, dxv.data());
  });
  return dx;
}

void Linear::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight_);
  if (has_bias_) out.push_back(&bias_);
}

}  // namespace rcts
