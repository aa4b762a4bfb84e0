#include "reference/modules/linear.hpp"

#include "reference/modules/tensor_parallel.hpp"
#include "reference/runtime/compute.hpp"
#include "reference/runtime/fp8.hpp"

namespace rcts {

namespace {
std::vector<std::pair<int64_t, int64_t>> all_of(int64_t n) { return {{0, n}}; }
}  // namespace

Linear::Linear(Runtime& rt, std::string path, LinearSpec spec) : Linear(rt, std::move(path), spec, {}) {}

Linear::Linear(Runtime& rt, std::string path, LinearSpec spec, const std::vector<int64_t>& sections)
    : rt_(rt), path_(std::move(path)), spec_(spec) {
  const int t = rt.tp_group->size(), r = rt.tp_group->rank();
  RCTS_CHECK(spec.tp != TpMode::row || spec.in % t == 0,
             path_ + ": " + std::to_string(spec.in) + " input features do not split over " + std::to_string(t) + " ranks");
  auto rows = spec.tp == TpMode::column ? tp_row_blocks(spec.out, spec.column_blocks, r, t) : all_of(spec.out);
  if (spec.tp == TpMode::column && !sections.empty()) rows = tp_row_sections(sections, r, t);
  auto cols = spec.tp == TpMode::row ? std::vector<std::pair<int64_t, int64_t>>{{r * spec.in / t, (r + 1) * spec.in / t}}
                                     : all_of(spec.in);
  in_ = spec.tp == TpMode::row ? spec.in / t : spec.in;
  out_ = spec.tp == TpMode::column ? spec.out / t : spec.out;
  weight_ = make_parameter_slice(rt, path_ + ".weight", {spec.out, spec.in}, rows, cols, Init::uniform_fan_in, spec.in);
  if (spec.bias)
    bias_ = make_parameter_slice(rt, path_ + ".bias", {spec.out}, rows, {}, Init::uniform_fan_in, spec.in);
}

bool Linear::sp() const { return rt_.config.parallel.sequence_parallel && spec_.tp != TpMode::none; }

Tensor Linear::forward(SaveContext& ctx, const Tensor& x_in) {
  ctx.save(x_in, "input");  // under SP, the column-parallel input is the shard
  const Tensor x = (sp() && spec_.tp == TpMode::column) ? sp_gather(rt_, x_in, path_ + ".input.gathered") : x_in;
  const Tensor x_gemm = fp8_forward_input(rt_, path_ + ".input", x);  // FP8: the quantised copy
  const int64_t rows = x.numel() / in_;
  const bool reduce = spec_.tp == TpMode::row;
  const int64_t out_rows = (reduce && sp()) ? rows / rt_.tp_group->size() : rows;
  Tensor y = rt_.activation({out_rows, out_}, path_ + ".output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& k = rt_.ops<T>();
    const ComputeIn<T> xv(rt_, x_gemm);
    const T* w = param_data<T>(weight_.value);
    auto add_bias = [&](T* yp) {
      if (spec_.bias) k.bias_add(yp, yp, param_data<T>(bias_.value), out_rows, out_);
    };
    if (!(reduce && sp())) {
      // The product lands in the output itself (f32) or in one scratch buffer.
      ComputeOut<T> yo(rt_, y);
      k.gemm(Trans::N, Trans::T, rows, out_, in_, xv.data(), in_, w, in_, yo.data(), out_, false);
      if (reduce) rt_.all_reduce_sum(*rt_.tp_group, yo.data(), rows * out_);
      add_bias(yo.data());
      yo.commit();
    } else {
      auto yv = rt_.workspace.take<T>(static_cast<size_t>(rows * out_));
      k.gemm(Trans::N, Trans::T, rows, out_, in_, xv.data(), in_, w, in_, yv.data(), out_, false);
      ComputeOut<T> yo(rt_, y);
      rt_.reduce_scatter_sum(*rt_.tp_group, yv.data(), yo.data(), out_rows * out_);
      add_bias(yo.data());
      yo.commit();
    }
  });
  return y;
}

Tensor Linear::backward(SaveContext& ctx, const Tensor& dy_in) {
  const Tensor saved = ctx.load("input");
  const bool column = spec_.tp == TpMode::column;
  const Tensor x = (sp() && column) ? sp_gather(rt_, saved, path_ + ".input.regathered") : saved;
  const Tensor dy = (sp() && spec_.tp == TpMode::row) ? sp_gather(rt_, dy_in, path_ + ".output.grad.gathered") : dy_in;
  const int64_t rows = x.numel() / in_;
  Tensor dx = rt_.activation(saved.shape(), path_ + ".input.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& k = rt_.ops<T>();
    const ComputeIn<T> xv(rt_, x);
    const ComputeIn<T> dyv(rt_, dy);
    const T* w = param_data<T>(weight_.value);
    // dx (rows, in) = dy (rows, out) . W (out, in): into dx itself unless SP's
    // reduce-scatter needs the full-length partial first.
    if (column && sp()) {
      auto full = rt_.workspace.take<T>(xv.size());
      k.gemm(Trans::N, Trans::N, rows, in_, out_, dyv.data(), out_, w, in_, full.data(), in_, false);
      ComputeOut<T> dxo(rt_, dx);
      rt_.reduce_scatter_sum(*rt_.tp_group, full.data(), dxo.data(), saved.numel());
      dxo.commit();
    } else {
      ComputeOut<T> dxo(rt_, dx);
      k.gemm(Trans::N, Trans::N, rows, in_, out_, dyv.data(), out_, w, in_, dxo.data(), in_, false);
      if (column) rt_.all_reduce_sum(*rt_.tp_group, dxo.data(), rows * in_);
      dxo.commit();
    }
    // dW (out, in) += dy^T (out, rows) . x (rows, in): the token reduction follows the GEMM's k order.
    k.gemm(Trans::T, Trans::N, out_, in_, rows, dyv.data(), out_, xv.data(), in_, param_data<T>(weight_.grad), in_,
           true);
    // db += column sums over tokens, each from 0 in token order, then added once.
    if (spec_.bias) k.bias_backward(param_data<T>(bias_.grad), dyv.data(), rows, out_);
  });
  return dx;
}

void Linear::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight_);
  if (spec_.bias) out.push_back(&bias_);
}

}  // namespace rcts
