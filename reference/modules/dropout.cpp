#include "reference/modules/dropout.hpp"

#include "kernels/common/dropout_rule.hpp"
#include "kernels/cpu/dropout.hpp"
#include "reference/modules/compute.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {

bool dropout_active(const Runtime& rt, double p) { return rt.training() && p > 0; }

Tensor dropout_forward(Runtime& rt, SaveContext& ctx, const DropoutSite& site, const Tensor& x) {
  if (!dropout_active(rt, site.p)) return x;
  const int64_t n = x.numel();
  Generator& gen = rt.rng.device();
  const uint64_t seed = gen.state().seed;
  const uint64_t offset = gen.reserve(dropout_rule::blocks_for(n));
  Tensor mask = Tensor::empty(x.shape(), DType::u8, rt.place(), site.path + ".mask");
  cpu::dropout_mask(mask.data<uint8_t>(), n, site.p, seed, offset);
  rt.masks.push_back({site.path, site.kind, rt.rng.current_stream(), seed, offset, n, site.p,
                      fnv1a64(mask.bytes(), static_cast<size_t>(n)), rt.micro_batch, is_recomputing()});
  ctx.save(mask, "mask");
  Tensor y = rt.activation(x.shape(), site.path + ".output");
  with_compute_type(rt.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> xv(rt.workspace, x);
    ComputeOut<T> yv(rt.workspace, y);
    cpu::dropout_forward(yv.data(), xv.data(), mask.data<uint8_t>(), n, site.p);
    yv.commit();
  });
  return y;
}

Tensor dropout_backward(Runtime& rt, SaveContext& ctx, const DropoutSite& site, const Tensor& dy) {
  if (!dropout_active(rt, site.p)) return dy;
  Tensor mask = ctx.load(0);
  Tensor dx = rt.activation(dy.shape(), site.path + ".input.grad");
  with_compute_type(rt.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> dyv(rt.workspace, dy);
    ComputeOut<T> dxv(rt.workspace, dx);
    cpu::dropout_backward(dxv.data(), dyv.data(), mask.data<uint8_t>(), dy.numel(), site.p);
    dxv.commit();
  });
  return dx;
}

Tensor add(Runtime& rt, const Tensor& a, const Tensor& b, std::string name) {
  RCTS_CHECK(a.numel() == b.numel(), "add: '" + a.name() + "' and '" + b.name() + "' differ in size");
  Tensor y = rt.activation(a.shape(), std::move(name));
  with_compute_type(rt.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> av(rt.workspace, a), bv(rt.workspace, b);
    ComputeOut<T> yv(rt.workspace, y);
    for (size_t i = 0; i < av.size(); ++i) yv[i] = av[i] + bv[i];
    yv.commit();
  });
  return y;
}

}  // namespace rcts
