#include "reference/modules/linear.hpp"

#include "kernels/cpu/gemm.hpp"
#include "reference/modules/compute.hpp"
#include "reference/modules/tensor_parallel.hpp"

namespace rcts {

using cpu::Trans;

namespace {
std::vector<std::pair<int64_t, int64_t>> all_of(int64_t n) { return {{0, n}}; }
}  // namespace

Linear::Linear(Runtime& rt, std::string path, LinearSpec spec) : rt_(rt), path_(std::move(path)), spec_(spec) {
  const int t = rt.tp_group->size(), r = rt.tp_group->rank();
  RCTS_CHECK(spec.tp != TpMode::row || spec.in % t == 0,
             path_ + ": " + std::to_string(spec.in) + " input features do not split over " + std::to_string(t) + " ranks");
  auto rows = spec.tp == TpMode::column ? tp_row_blocks(spec.out, spec.column_blocks, r, t) : all_of(spec.out);
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
  const int64_t rows = x.numel() / in_;
  const bool reduce = spec_.tp == TpMode::row;
  const int64_t out_rows = (reduce && sp()) ? rows / rt_.tp_group->size() : rows;
  Tensor y = rt_.activation({out_rows, out_}, path_ + ".output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> xv(x);
    std::vector<T> yv(static_cast<size_t>(rows * out_));
    cpu::gemm<T>(Trans::N, Trans::T, rows, out_, in_, xv.data(), in_, param_data<T>(weight_.value), in_, yv.data(),
                 out_, false);
    if (reduce) {
      if (sp()) {
        std::vector<T> part(static_cast<size_t>(out_rows * out_));
        rt_.tp_group->reduce_scatter_sum(yv.data(), part.data(), out_rows * out_);
        yv.swap(part);
      } else {
        rt_.tp_group->all_reduce_sum(yv.data(), rows * out_);
      }
    }
    if (spec_.bias) {
      const T* b = param_data<T>(bias_.value);
      for (int64_t r = 0; r < out_rows; ++r)
        for (int64_t o = 0; o < out_; ++o) yv[static_cast<size_t>(r * out_ + o)] += b[o];
    }
    store(y, yv.data());
  });
  return y;
}

Tensor Linear::backward(SaveContext& ctx, const Tensor& dy_in) {
  const Tensor saved = ctx.load(0);
  const bool column = spec_.tp == TpMode::column;
  const Tensor x = (sp() && column) ? sp_gather(rt_, saved, path_ + ".input.regathered") : saved;
  const Tensor dy = (sp() && spec_.tp == TpMode::row) ? sp_gather(rt_, dy_in, path_ + ".output.grad.gathered") : dy_in;
  const int64_t rows = x.numel() / in_;
  Tensor dx = rt_.activation(saved.shape(), path_ + ".input.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> xv(x);
    const ComputeIn<T> dyv(dy);
    std::vector<T> dxv(xv.size());
    // dx (rows, in) = dy (rows, out) . W (out, in)
    cpu::gemm<T>(Trans::N, Trans::N, rows, in_, out_, dyv.data(), out_, param_data<T>(weight_.value), in_,
                 dxv.data(), in_, false);
    // dW (out, in) += dy^T (out, rows) . x (rows, in): the token reduction follows the GEMM's k order.
    cpu::gemm<T>(Trans::T, Trans::N, out_, in_, rows, dyv.data(), out_, xv.data(), in_,
                 param_data<T>(weight_.grad), in_, true);
    if (spec_.bias) {
      // db += sum over tokens, in token order, column by column.
      T* db = param_data<T>(bias_.grad);
      for (int64_t o = 0; o < out_; ++o) {
        T acc = 0;
        for (int64_t r = 0; r < rows; ++r) acc += dyv[static_cast<size_t>(r * out_ + o)];
        db[o] += acc;
      }
    }
    if (column) {
      if (sp()) {
        std::vector<T> part(static_cast<size_t>(saved.numel()));
        rt_.tp_group->reduce_scatter_sum(dxv.data(), part.data(), saved.numel());
        dxv.swap(part);
      } else {
        rt_.tp_group->all_reduce_sum(dxv.data(), rows * in_);
      }
    }
    store(dx, dxv.data());
  });
  return dx;
}

void Linear::parameters(std::vector<Parameter*>& out) {
  out.push_back(&weight_);
  if (spec_.bias) out.push_back(&bias_);
}

}  // namespace rcts
