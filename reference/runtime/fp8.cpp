#include "reference/runtime/fp8.hpp"

#include "kernels/common/bf16.hpp"
#include "kernels/exact/fp8.hpp"
#include "reference/core/error.hpp"
#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_state.hpp"
#include "reference/runtime/runtime.hpp"

namespace rcts {

Fp8DelayedScaling::Fp8DelayedScaling(const ModelConfig& m)
    : history_len_(m.fp8_amax_history_len), use_max_(m.fp8_amax_compute_algo == "max"), margin_(m.fp8_margin) {}

namespace {

// Host loops over an activation tensor's values as floats (bf16 or f32 storage).
template <class F> void for_each_value(const Tensor& t, F&& f) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::bf16) {
    const bf16* p = t.data<bf16>();
    for (int64_t i = 0; i < n; ++i) f(i, from_bf16(p[i]));
  } else {
    RCTS_CHECK(t.dtype() == DType::f32, "fp8: activations must be bf16 or f32, got " + std::string(dtype_name(t.dtype())));
    const float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) f(i, p[i]);
  }
}

void store(Tensor& t, int64_t i, float v) {
  if (t.dtype() == DType::bf16) t.data<bf16>()[i] = to_bf16(v);
  else t.data<float>()[i] = v;
}

}  // namespace

void Fp8DelayedScaling::record(Runtime& rt, const std::string& site, Site& s, float amax) {
  for (size_t i = s.amax_history.size() - 1; i > 0; --i) s.amax_history[i] = s.amax_history[i - 1];
  s.amax_history[0] = amax;
  float ref = s.amax_history[0];
  if (use_max_)
    for (float a : s.amax_history) ref = a > ref ? a : ref;
  auto finite = [](float v) { return (hd::bits(v) & 0x7f800000u) != 0x7f800000u; };
  if (ref > 0.0f && finite(ref)) {
    // A tiny amax can overflow the scale: keep the old one rather than scale by Inf.
    const float next = (exact::fp8_max(exact::kE4M3) / ref) * exact::fp8_pow2(-margin_);
    if (finite(next)) s.scale = next;
  }
  for (size_t i = 0; i < s.amax_history.size(); ++i)
    rt.side_effects[site + ".fp8.amax_history." + std::to_string(i)] = s.amax_history[i];
  rt.side_effects[site + ".fp8.scale"] = s.scale;
}

Tensor Fp8DelayedScaling::forward_input(Runtime& rt, const std::string& site, const Tensor& x) {
  Site& s = sites_[site];
  if (s.amax_history.empty()) s.amax_history.assign(static_cast<size_t>(history_len_), 0.0f);
  // A recompute replays the original forward's scale and records nothing; the mutant
  // treats it as one more forward (TransformerEngine without its recompute stash).
  const bool replay = is_recomputing() && !fault_on(Fault::fp8_amax_advanced_in_recompute);
  const std::pair<int, int> mb{rt.step, rt.micro_batch};
  if (!replay) {
    s.forward_scale = s.scale;
    s.forward_scales[mb] = s.scale;
  }
  // Mutant fp8_replays_latest_forward: the latest original forward's scale, which under
  // 1F1B may be a later micro-batch's.
  const auto own = s.forward_scales.find(mb);
  RCTS_CHECK(!replay || own != s.forward_scales.end(),
             "fp8: recompute of '" + site + "' in step " + std::to_string(mb.first) + " micro-batch " +
                 std::to_string(mb.second) + " without its forward");
  const float scale =
      !replay ? s.scale : fault_on(Fault::fp8_replays_latest_forward) ? s.forward_scale : own->second;
  const float scale_inv = 1.0f / scale;

  const Tensor hx = rt.host_readable(x);
  Tensor out = rt.activation(x.shape(), site + ".fp8");
  Tensor hout = out.host_accessible() ? out : Tensor::uninitialized(x.shape(), x.dtype(), host_placement(), site + ".fp8");
  float amax = 0.0f;
  for_each_value(hx, [&](int64_t i, float v) {
    const float a = v < 0.0f ? -v : v;
    amax = a > amax ? a : amax;
    store(hout, i, exact::fp8_fake_quant(v, scale, scale_inv, exact::kE4M3));
  });
  if (!replay) record(rt, site, s, amax);
  return out.host_accessible() ? out : hout.clone(rt.place(), site + ".fp8");
}

Tensor fp8_forward_input(Runtime& rt, const std::string& site, const Tensor& x) {
  return rt.fp8 ? rt.fp8->forward_input(rt, site, x) : x;
}

}  // namespace rcts
