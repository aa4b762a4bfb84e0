#include "reference/modules/dropout.hpp"

#include "kernels/common/dropout_rule.hpp"
#include "reference/recompute/checkpoint_state.hpp"
#include "reference/runtime/compute.hpp"

namespace rcts {

bool dropout_active(const Runtime& rt, double p) { return rt.training() && p > 0; }

Tensor dropout_forward(Runtime& rt, SaveContext& ctx, const DropoutSite& site, const Tensor& x) {
  if (!dropout_active(rt, site.p)) return x;
  const int64_t n = x.numel();
  Generator& gen = rt.rng.device();
  const uint64_t seed = gen.state().seed;
  const uint64_t offset = gen.reserve(dropout_rule::blocks_for(n));
  Tensor mask = Tensor::uninitialized(x.shape(), DType::u8, rt.place(), site.path + ".mask");
  rt.backend.dropout_mask(mask.data<uint8_t>(), n, site.p, seed, offset);
  const Tensor logged = rt.host_readable(mask);
  rt.masks.push_back({site.path, site.kind, rt.rng.current_stream(), seed, offset, n, site.p,
                      fnv1a64(logged.bytes(), static_cast<size_t>(n)), rt.micro_batch, is_recomputing(), rt.step,
                      x.shape(), rt.keep_masks ? logged.clone(host_placement()) : Tensor{}});
  ctx.save(mask, "mask");
  Tensor y = rt.activation(x.shape(), site.path + ".output");
  with_compute_type(rt.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> xv(rt, x);
    ComputeOut<T> yv(rt, y);
    rt.ops<T>().dropout_apply(yv.data(), xv.data(), mask.data<uint8_t>(), n, site.p);
    yv.commit();
  });
  return y;
}

Tensor dropout_backward(Runtime& rt, SaveContext& ctx, const DropoutSite& site, const Tensor& dy) {
  if (!dropout_active(rt, site.p)) return dy;
  Tensor mask = ctx.load("mask");
  Tensor dx = rt.activation(dy.shape(), site.path + ".input.grad");
  with_compute_type(rt.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> dyv(rt, dy);
    ComputeOut<T> dxv(rt, dx);
    rt.ops<T>().dropout_apply(dxv.data(), dyv.data(), mask.data<uint8_t>(), dy.numel(), site.p);
    dxv.commit();
  });
  return dx;
}

Tensor add(Runtime& rt, const Tensor& a, const Tensor& b, std::string name) {
  RCTS_CHECK(a.numel() == b.numel(), "add: '" + a.name() + "' and '" + b.name() + "' differ in size");
  Tensor y = rt.activation(a.shape(), std::move(name));
  with_compute_type(rt.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> av(rt, a), bv(rt, b);
    ComputeOut<T> yv(rt, y);
    rt.ops<T>().add(yv.data(), av.data(), bv.data(), a.numel());
    yv.commit();
  });
  return y;
}

}  // namespace rcts
