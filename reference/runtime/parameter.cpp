#include "reference/runtime/parameter.hpp"

#include <cmath>
#include <cstring>

#include "kernels/common/philox.hpp"

namespace rcts {

void fill_uniform(Tensor& t, uint64_t seed, const std::string& key, double scale) {
  const uint64_t stream = seed ^ fnv1a64(key.data(), key.size());
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); i += 4) {
    const auto b = philox::block(stream, static_cast<uint64_t>(i / 4));
    for (int64_t j = 0; j < 4 && i + j < t.numel(); ++j) {
      // 24 random bits -> [0, 1) exactly, then [-1, 1): no rounding anywhere but the scale.
      const double u = static_cast<double>(b[static_cast<size_t>(j)] >> 8) * (1.0 / 16777216.0);
      v[static_cast<size_t>(i + j)] = (2.0 * u - 1.0) * scale;
    }
  }
  store(t, v.data());
}

Parameter make_parameter(Runtime& rt, const std::string& name, const Shape& shape, Init init, int64_t fan_in) {
  Parameter p;
  p.name = name;
  p.value = Tensor::empty(shape, rt.param_dtype(), rt.place(Category::param), name);
  p.grad = Tensor::empty(shape, rt.param_dtype(), rt.place(Category::grad), name + ".grad");
  switch (init) {
    case Init::uniform_fan_in:
      // sqrt is correctly rounded (IEEE), so this is reproducible everywhere.
      fill_uniform(p.value, rt.config.run.seed, name, 1.0 / std::sqrt(static_cast<double>(fan_in)));
      break;
    case Init::ones_jitter: {
      // Norm weights near 1, not exactly 1, so gradient checks see the weight.
      fill_uniform(p.value, rt.config.run.seed, name, 0.1);
      std::vector<double> v = to_vector<double>(p.value);
      for (auto& x : v) x += 1.0;
      store(p.value, v.data());
      break;
    }
    case Init::zeros_jitter:
      fill_uniform(p.value, rt.config.run.seed, name, 0.1);
      break;
  }
  return p;
}

Parameter make_parameter_slice(Runtime& rt, const std::string& name, const Shape& full, const Ranges& rows,
                               const Ranges& cols, Init init, int64_t fan_in) {
  // Draw the full parameter untracked, then keep the slice as the tracked parameter.
  Parameter whole = make_parameter(rt, name, full, init, fan_in);
  const Ranges all_rows = rows.empty() ? Ranges{{0, full[0]}} : rows;
  const int64_t width = full.size() > 1 ? full[1] : 1;
  const Ranges all_cols = (cols.empty() || full.size() < 2) ? Ranges{{0, width}} : cols;
  int64_t nrows = 0, ncols = 0;
  for (auto [b, e] : all_rows) nrows += e - b;
  for (auto [b, e] : all_cols) ncols += e - b;
  if (nrows == full[0] && ncols == width) return whole;
  Shape local = full.size() > 1 ? Shape{nrows, ncols} : Shape{nrows};
  Parameter p;
  p.name = name;
  p.value = Tensor::uninitialized(local, rt.param_dtype(), rt.place(Category::param), name);
  p.grad = Tensor::empty(local, rt.param_dtype(), rt.place(Category::grad), name + ".grad");
  // The slice is assembled on the host and copied into place once.
  const Tensor full_values = whole.value.clone(host_placement());
  Tensor slice = Tensor::uninitialized(local, rt.param_dtype(), host_placement(), name);
  const auto esz = static_cast<int64_t>(dtype_size(rt.param_dtype()));
  const std::byte* src = full_values.bytes();
  std::byte* dst = slice.bytes();
  for (auto [rb, re] : all_rows)
    for (int64_t r = rb; r < re; ++r)
      for (auto [cb, ce] : all_cols) {
        std::memcpy(dst, src + (r * width + cb) * esz, static_cast<size_t>((ce - cb) * esz));
        dst += (ce - cb) * esz;
      }
  p.value.copy_from(slice);
  return p;
}

void zero_grads(std::vector<Parameter*>& params) {
  for (auto* p : params) p->grad.fill_bytes(0);
}

}  // namespace rcts
