#include "reference/modules/gdn.hpp"

#include "reference/recompute/output_discarding.hpp"
#include "reference/runtime/compute.hpp"

namespace rcts {

namespace {
using Ranges = std::vector<std::pair<int64_t, int64_t>>;
Ranges shard(int64_t n, int r, int t) { return {{r * (n / t), (r + 1) * (n / t)}}; }
const StashKey<std::shared_ptr<OutputDiscardingCheckpoint>> kNormCheckpoint{"gdn.norm_out.checkpoint"};
// The in_proj output sections [q | k | v | z | b | a] (full sizes), then their sum.
std::vector<int64_t> in_proj_sections(const ModelConfig& m) {
  const int64_t qk = int64_t{m.linear_num_key_heads} * m.linear_key_head_dim;
  const int64_t vz = int64_t{m.linear_num_value_heads} * m.linear_value_head_dim;
  const int64_t nv = m.linear_num_value_heads;
  return {qk, qk, vz, vz, nv, nv, 2 * qk + 2 * vz + 2 * nv};
}
}  // namespace

GatedDeltaNet::GatedDeltaNet(Runtime& rt, std::string path, bool recompute_norm_out, int layer)
    : rt_(rt),
      path_(std::move(path)),
      s_(rt.config.model.seq_length),
      b_(rt.config.model.micro_batch_size),
      h_(rt.config.model.hidden_size),
      hk_(rt.config.model.linear_num_key_heads / rt.tp_group->size()),
      hv_(rt.config.model.linear_num_value_heads / rt.tp_group->size()),
      dk_(rt.config.model.linear_key_head_dim),
      dv_(rt.config.model.linear_value_head_dim),
      K_(rt.config.model.linear_conv_kernel_dim),
      width_(2 * hk_ * dk_ + 2 * hv_ * dv_ + 2 * hv_),
      recompute_norm_out_(recompute_norm_out),
      layer_(layer),
      in_proj_(rt, path_ + ".in_proj", {h_, in_proj_sections(rt.config.model).back(), false, TpMode::column, 1},
               [&] {
                 auto v = in_proj_sections(rt.config.model);
                 v.pop_back();
                 return v;
               }()),
      norm_(rt, path_ + ".out_norm", dv_, norm_weight_),
      out_proj_(rt, path_ + ".out_proj",
                {int64_t{rt.config.model.linear_num_value_heads} * dv_, h_, false, TpMode::row, 1}) {
  const int t = rt.tp_group->size(), r = rt.tp_group->rank();
  const auto& m = rt.config.model;
  const int64_t nk = m.linear_num_key_heads, nv = m.linear_num_value_heads;
  conv_q_ = make_parameter_slice(rt, path_ + ".conv_q.weight", {nk * dk_, K_}, shard(nk * dk_, r, t), {},
                                 Init::uniform_fan_in, K_);
  conv_k_ = make_parameter_slice(rt, path_ + ".conv_k.weight", {nk * dk_, K_}, shard(nk * dk_, r, t), {},
                                 Init::uniform_fan_in, K_);
  conv_v_ = make_parameter_slice(rt, path_ + ".conv_v.weight", {nv * dv_, K_}, shard(nv * dv_, r, t), {},
                                 Init::uniform_fan_in, K_);
  A_log_ = make_parameter_slice(rt, path_ + ".A_log", {nv}, shard(nv, r, t), {}, Init::zeros_jitter);
  dt_bias_ = make_parameter_slice(rt, path_ + ".dt_bias", {nv}, shard(nv, r, t), {}, Init::zeros_jitter);
  norm_weight_ = make_parameter(rt, path_ + ".out_norm.weight", {dv_}, Init::ones_jitter);
}

// ---- the gated output norm -------------------------------------------------------------
std::vector<Tensor> GatedDeltaNet::GatedNorm::forward(SaveContext& ctx, const std::vector<Tensor>& in) {
  rt_.counters.count_forward(path_);
  const Tensor &o = in.at(0), &z = in.at(1);
  ctx.save(o, "input");
  ctx.save(z, "gate");
  Tensor y = rt_.activation(o.shape(), path_ + ".output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> ov(rt_, o), zv(rt_, z);
    ComputeOut<T> yv(rt_, y);
    rt_.ops<T>().gated_rmsnorm_forward(yv.data(), ov.data(), zv.data(), param_data<T>(w_.value), o.numel() / dv_, dv_,
                                       rt_.config.model.layernorm_epsilon);
    yv.commit();
  });
  return {y};
}

std::vector<Tensor> GatedDeltaNet::GatedNorm::backward(SaveContext& ctx, const std::vector<Tensor>& dout) {
  Tensor o = ctx.load("input"), z = ctx.load("gate");
  Tensor dx = rt_.activation(o.shape(), path_ + ".input.grad");
  Tensor dz = rt_.activation(z.shape(), path_ + ".gate.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> ov(rt_, o), zv(rt_, z), dyv(rt_, dout.at(0));
    ComputeOut<T> dxv(rt_, dx), dzv(rt_, dz);
    // The weight is shared by this rank's heads only: its gradient is summed over the
    // TP ranks (rank order) before it is added, so every rank holds the same bits.
    auto dw = rt_.workspace.zeros<T>(static_cast<size_t>(dv_));
    ops.gated_rmsnorm_backward(dxv.data(), dzv.data(), dw.data(), dyv.data(), ov.data(), zv.data(),
                               param_data<T>(w_.value), o.numel() / dv_, dv_, rt_.config.model.layernorm_epsilon);
    if (rt_.tp_group->size() > 1) rt_.all_reduce_sum(*rt_.tp_group, dw.data(), dv_);
    ops.add(param_data<T>(w_.grad), param_data<T>(w_.grad), dw.data(), dv_);
    dxv.commit();
    dzv.commit();
  });
  return {dx, dz};
}

// ---- the layer -------------------------------------------------------------------------
Tensor GatedDeltaNet::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  Tensor mixed = in_proj_.forward(ctx.child("in_proj"), x);  // (s*b, width) [q|k|v|z|b|a]
  const int esize = static_cast<int>(dtype_size(rt_.act_dtype()));
  const int64_t cq = 0, cqk = hk_ * dk_, cv = 2 * hk_ * dk_, cz = cv + hv_ * dv_, cb = cz + hv_ * dv_, ca = cb + hv_;
  Tensor qc = rt_.activation({b_, hk_, s_, dk_}, path_ + ".conv_q.input");
  Tensor kc = rt_.activation({b_, hk_, s_, dk_}, path_ + ".conv_k.input");
  Tensor vc = rt_.activation({b_, hv_, s_, dv_}, path_ + ".conv_v.input");
  Tensor z = rt_.activation({s_ * b_, hv_ * dv_}, path_ + ".gate");
  Tensor braw = rt_.activation({b_, hv_, s_}, path_ + ".beta.input");
  Tensor araw = rt_.activation({b_, hv_, s_}, path_ + ".alpha.input");
  auto& be = rt_.backend;
  be.tokens_to_heads(qc.bytes(), mixed.bytes(), esize, width_, cq, s_, b_, hk_, dk_);
  be.tokens_to_heads(kc.bytes(), mixed.bytes(), esize, width_, cqk, s_, b_, hk_, dk_);
  be.tokens_to_heads(vc.bytes(), mixed.bytes(), esize, width_, cv, s_, b_, hv_, dv_);
  be.tokens_to_heads(z.bytes(), mixed.bytes(), esize, width_, cz, s_ * b_, 1, 1, hv_ * dv_);  // stays token layout
  be.tokens_to_heads(braw.bytes(), mixed.bytes(), esize, width_, cb, s_, b_, hv_, 1);
  be.tokens_to_heads(araw.bytes(), mixed.bytes(), esize, width_, ca, s_, b_, hv_, 1);
  ctx.save(qc, "conv_q.input");
  ctx.save(kc, "conv_k.input");
  ctx.save(vc, "conv_v.input");

  Tensor q = rt_.activation(qc.shape(), path_ + ".q");
  Tensor k = rt_.activation(kc.shape(), path_ + ".k");
  Tensor v = rt_.activation(vc.shape(), path_ + ".v");
  Tensor o = rt_.activation({b_, hv_, s_, dv_}, path_ + ".rule.output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    {
      const ComputeIn<T> qci(rt_, qc), kci(rt_, kc), vci(rt_, vc);
      ComputeOut<T> qo(rt_, q), ko(rt_, k), vo(rt_, v);
      ops.causal_conv_silu_forward(qo.data(), qci.data(), param_data<T>(conv_q_.value), b_, hk_, s_, dk_, K_);
      ops.causal_conv_silu_forward(ko.data(), kci.data(), param_data<T>(conv_k_.value), b_, hk_, s_, dk_, K_);
      ops.causal_conv_silu_forward(vo.data(), vci.data(), param_data<T>(conv_v_.value), b_, hv_, s_, dv_, K_);
      qo.commit();
      ko.commit();
      vo.commit();
    }
    const ComputeIn<T> qi(rt_, q), ki(rt_, k), vi(rt_, v), ai(rt_, araw), bi(rt_, braw);
    ComputeOut<T> oo(rt_, o);
    ops.gated_delta_rule_forward(oo.data(), qi.data(), ki.data(), vi.data(), ai.data(), bi.data(),
                                 param_data<T>(A_log_.value), param_data<T>(dt_bias_.value), b_, hk_, hv_, s_, dk_,
                                 dv_);
    oo.commit();
  });
  ctx.save(q, "rule.q");
  ctx.save(k, "rule.k");
  ctx.save(v, "rule.v");
  ctx.save(araw, "rule.alpha");
  ctx.save(braw, "rule.beta");

  Tensor o_tok = rt_.activation({s_ * b_, hv_ * dv_}, path_ + ".out_norm.input");
  be.heads_to_tokens(o_tok.bytes(), o.bytes(), esize, hv_ * dv_, 0, s_, b_, hv_, dv_);
  SaveContext& nctx = ctx.child("out_norm");
  Tensor y;
  std::shared_ptr<OutputDiscardingCheckpoint> ck;
  if (recompute_norm_out_) {
    ck = std::make_shared<OutputDiscardingCheckpoint>(rt_.rng, norm_, nctx);
    ctx.stash(kNormCheckpoint, ck);
    y = ck->forward({o_tok, z}).at(0);
  } else {
    y = norm_.forward(nctx, {o_tok, z}).at(0);
  }
  Tensor out = out_proj_.forward(ctx.child("out_proj"), y);
  // out_proj saved y: its bytes go until out_proj's output gradient arrives.
  if (recompute_norm_out_ && ctx.enabled()) ck->discard_output_and_register_recompute(path_ + ".out_proj.output");
  return out;
}

Tensor GatedDeltaNet::backward(SaveContext& ctx, const Tensor& dy) {
  // The gradient of out_proj's output arrived: the norm output comes back first.
  if (recompute_norm_out_) ctx.stashed(kNormCheckpoint)->recompute();
  Tensor dnorm = out_proj_.backward(ctx.child("out_proj"), dy);
  SaveContext& nctx = ctx.child("out_norm");
  std::vector<Tensor> dnz = recompute_norm_out_ ? ctx.stashed(kNormCheckpoint)->backward({dnorm})
                                                : norm_.backward(nctx, {dnorm});
  const int esize = static_cast<int>(dtype_size(rt_.act_dtype()));
  const int64_t cq = 0, cqk = hk_ * dk_, cv = 2 * hk_ * dk_, cz = cv + hv_ * dv_, cb = cz + hv_ * dv_, ca = cb + hv_;
  auto& be = rt_.backend;
  Tensor dout = rt_.activation({b_, hv_, s_, dv_}, path_ + ".rule.output.grad");
  be.tokens_to_heads(dout.bytes(), dnz.at(0).bytes(), esize, hv_ * dv_, 0, s_, b_, hv_, dv_);

  Tensor q = ctx.load("rule.q"), k = ctx.load("rule.k"), v = ctx.load("rule.v");
  Tensor araw = ctx.load("rule.alpha"), braw = ctx.load("rule.beta");
  Tensor qc = ctx.load("conv_q.input"), kc = ctx.load("conv_k.input"), vc = ctx.load("conv_v.input");
  Tensor dqc = rt_.activation(qc.shape(), path_ + ".conv_q.input.grad");
  Tensor dkc = rt_.activation(kc.shape(), path_ + ".conv_k.input.grad");
  Tensor dvc = rt_.activation(vc.shape(), path_ + ".conv_v.input.grad");
  Tensor da = rt_.activation(araw.shape(), path_ + ".alpha.input.grad");
  Tensor db = rt_.activation(braw.shape(), path_ + ".beta.input.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> qi(rt_, q), ki(rt_, k), vi(rt_, v), ai(rt_, araw), bi(rt_, braw), doi(rt_, dout);
    auto dq = rt_.workspace.zeros<T>(static_cast<size_t>(q.numel())), dk = rt_.workspace.zeros<T>(static_cast<size_t>(k.numel()));
    auto dv = rt_.workspace.zeros<T>(static_cast<size_t>(v.numel()));
    ComputeOut<T> dao(rt_, da), dbo(rt_, db);
    ops.gated_delta_rule_backward(dq.data(), dk.data(), dv.data(), dao.data(), dbo.data(), param_data<T>(A_log_.grad),
                                  param_data<T>(dt_bias_.grad), doi.data(), qi.data(), ki.data(), vi.data(), ai.data(),
                                  bi.data(), param_data<T>(A_log_.value), param_data<T>(dt_bias_.value), b_, hk_, hv_,
                                  s_, dk_, dv_);
    dao.commit();
    dbo.commit();
    // The conv outputs' gradients are rounded to the activation dtype like every
    // activation gradient, then the conv backward reads them.
    Tensor dq_t = rt_.activation(q.shape(), path_ + ".q.grad"), dk_t = rt_.activation(k.shape(), path_ + ".k.grad");
    Tensor dv_t = rt_.activation(v.shape(), path_ + ".v.grad");
    be.convert(dq_t.bytes(), dq_t.dtype(), dq.data(), dtype_of<T>(), q.numel());
    be.convert(dk_t.bytes(), dk_t.dtype(), dk.data(), dtype_of<T>(), k.numel());
    be.convert(dv_t.bytes(), dv_t.dtype(), dv.data(), dtype_of<T>(), v.numel());
    const ComputeIn<T> dqi(rt_, dq_t), dki(rt_, dk_t), dvi(rt_, dv_t);
    const ComputeIn<T> qci(rt_, qc), kci(rt_, kc), vci(rt_, vc);
    ComputeOut<T> dqo(rt_, dqc), dko(rt_, dkc), dvo(rt_, dvc);
    ops.causal_conv_silu_backward(dqo.data(), param_data<T>(conv_q_.grad), dqi.data(), qci.data(),
                                  param_data<T>(conv_q_.value), b_, hk_, s_, dk_, K_);
    ops.causal_conv_silu_backward(dko.data(), param_data<T>(conv_k_.grad), dki.data(), kci.data(),
                                  param_data<T>(conv_k_.value), b_, hk_, s_, dk_, K_);
    ops.causal_conv_silu_backward(dvo.data(), param_data<T>(conv_v_.grad), dvi.data(), vci.data(),
                                  param_data<T>(conv_v_.value), b_, hv_, s_, dv_, K_);
    dqo.commit();
    dko.commit();
    dvo.commit();
  });
  Tensor dmixed = rt_.activation({s_ * b_, width_}, path_ + ".in_proj.output.grad");
  be.heads_to_tokens(dmixed.bytes(), dqc.bytes(), esize, width_, cq, s_, b_, hk_, dk_);
  be.heads_to_tokens(dmixed.bytes(), dkc.bytes(), esize, width_, cqk, s_, b_, hk_, dk_);
  be.heads_to_tokens(dmixed.bytes(), dvc.bytes(), esize, width_, cv, s_, b_, hv_, dv_);
  be.heads_to_tokens(dmixed.bytes(), dnz.at(1).bytes(), esize, width_, cz, s_ * b_, 1, 1, hv_ * dv_);
  be.heads_to_tokens(dmixed.bytes(), db.bytes(), esize, width_, cb, s_, b_, hv_, 1);
  be.heads_to_tokens(dmixed.bytes(), da.bytes(), esize, width_, ca, s_, b_, hv_, 1);
  return in_proj_.backward(ctx.child("in_proj"), dmixed);
}

void GatedDeltaNet::parameters(std::vector<Parameter*>& out) {
  in_proj_.parameters(out);
  for (Parameter* p : {&conv_q_, &conv_k_, &conv_v_, &A_log_, &dt_bias_, &norm_weight_}) out.push_back(p);
  out_proj_.parameters(out);
}

}  // namespace rcts
