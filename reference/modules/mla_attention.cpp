#include "reference/modules/mla_attention.hpp"

#include <algorithm>
#include <optional>

#include "reference/core/faults.hpp"
#include "reference/modules/dropout.hpp"
#include "reference/runtime/rope_table.hpp"
#include "reference/recompute/checkpoint_function.hpp"
#include "reference/recompute/checkpoint_state.hpp"
#include "reference/recompute/output_discarding.hpp"
#include "reference/runtime/compute.hpp"

namespace rcts {

MlaDims MlaDims::from(const Runtime& rt) {
  const auto& c = rt.config.model;
  MlaDims m{};
  m.s = c.seq_length;
  m.b = c.micro_batch_size;
  m.h = c.hidden_size;
  m.a = c.num_attention_heads;
  m.n = c.num_attention_heads / rt.tp_group->size();
  m.qr = c.q_lora_rank;
  m.kvr = c.kv_lora_rank;
  m.dn = c.qk_head_dim;
  m.dr = c.qk_pos_emb_head_dim;
  m.dq = m.dn + m.dr;
  m.dv = c.v_head_dim;
  return m;
}

namespace {

Tensor constant_table(Runtime& rt, const std::string& name, const Shape& shape, const std::vector<double>& v) {
  Tensor t = Tensor::uninitialized(shape, rt.param_dtype(), rt.place(Category::param), name);
  if (rt.param_dtype() == DType::f64) {
    t.write_from_host(v.data());
  } else {
    std::vector<float> f(v.begin(), v.end());  // each value rounded once
    t.write_from_host(f.data());
  }
  return t;
}

MlaTables make_tables(Runtime& rt, const std::string& path, const MlaDims& m) {
  MlaTables t;
  t.ni = std::max({m.kvr, m.dn, m.dr, m.dv});
  std::vector<double> eye(static_cast<size_t>(t.ni * t.ni), 0.0);
  for (int64_t i = 0; i < t.ni; ++i) eye[static_cast<size_t>(i * t.ni + i)] = 1.0;
  t.identity = constant_table(rt, path + ".identity", {t.ni, t.ni}, eye);
  t.rope = constant_table(rt, path + ".rope", {m.s, m.dr, m.dr},
                          rope_rotation_table(m.s, m.dr, rt.config.model.rotary_base));
  return t;
}

// C[r][0..cols) = A[r][0..cols) for `rows` rows: the product with the identity, which the
// GEMM order computes exactly (each output one fma of x*1 onto +0, then +0 terms).
template <typename T>
void copy_columns(Ops<T>& ops, const MlaTables& t, int64_t rows, int64_t cols, const T* A, int64_t lda, T* C,
                  int64_t ldc) {
  ops.gemm(Trans::N, Trans::N, rows, cols, cols, A, lda, param_data<T>(t.identity), t.ni, C, ldc, false);
}

int kActElem(const Runtime& rt) { return static_cast<int>(dtype_size(rt.act_dtype())); }

}  // namespace

MlaUpProj::MlaUpProj(Runtime& rt, const std::string& path, const MlaDims& m, const MlaTables& tables)
    : rt_(rt),
      path_(path),
      m_(m),
      tables_(tables),
      q_up_(rt, path + (m.qr > 0 ? ".linear_q_up_proj" : ".linear_q_proj"),
            {m.qr > 0 ? m.qr : m.h, m.a * m.dq, false, TpMode::column, 1}),
      kv_up_(rt, path + ".linear_kv_up_proj", {m.kvr, m.a * (m.dn + m.dv), false, TpMode::column, 1}) {}

std::vector<Tensor> MlaUpProj::forward(SaveContext& ctx, const std::vector<Tensor>& in) {
  rt_.counters.count_forward(path_ + ".up_proj");
  const Tensor& kpe = in.at(2);
  Tensor q = q_up_.forward(ctx.child("q_up"), in.at(0));    // (N, n*dq)
  Tensor kv = kv_up_.forward(ctx.child("kv_up"), in.at(1));  // (N, n*(dn+dv))
  const int64_t N = m_.s * m_.b, n = m_.n, dn = m_.dn, dr = m_.dr, dq = m_.dq, dv = m_.dv, dkv = dn + dv;
  Tensor qt = rt_.activation({N, n * dq}, path_ + ".query.tokens");
  Tensor kt = rt_.activation({N, n * dq}, path_ + ".key.tokens");
  Tensor vt = rt_.activation({N, n * dv}, path_ + ".value.tokens");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> qv(rt_, q), kvv(rt_, kv), pv(rt_, kpe);
    ComputeOut<T> qo(rt_, qt), ko(rt_, kt), vo(rt_, vt);
    const T* R = param_data<T>(tables_.rope);
    // Rows (token, head) of stride dq (q, key) or dn+dv (kv): one position's rows are
    // b*n consecutive rows, so each RoPE product is one batch entry per position.
    copy_columns(ops, tables_, N * n, dn, qv.data(), dq, qo.data(), dq);
    ops.gemm_batched(Trans::N, Trans::T, m_.b * n, dr, dr, qv.data() + dn, dq, m_.b * n * dq, R, dr, dr * dr,
                     qo.data() + dn, dq, m_.b * n * dq, m_.s, false);
    copy_columns(ops, tables_, N * n, dn, kvv.data(), dkv, ko.data(), dq);
    // k_pe is shared by every head: rotated into each head's pe part.
    for (int64_t i = 0; i < n; ++i)
      ops.gemm_batched(Trans::N, Trans::T, m_.b, dr, dr, pv.data(), dr, m_.b * dr, R, dr, dr * dr,
                       ko.data() + i * dq + dn, n * dq, m_.b * n * dq, m_.s, false);
    copy_columns(ops, tables_, N * n, dv, kvv.data() + dn, dkv, vo.data(), dv);
    qo.commit();
    ko.commit();
    vo.commit();
  });
  const int es = kActElem(rt_);
  Tensor qh = rt_.activation({m_.b, n, m_.s, dq}, path_ + ".q");
  Tensor kh = rt_.activation({m_.b, n, m_.s, dq}, path_ + ".k");
  Tensor vh = rt_.activation({m_.b, n, m_.s, dv}, path_ + ".v");
  rt_.backend.tokens_to_heads(qh.bytes(), qt.bytes(), es, n * dq, 0, m_.s, m_.b, n, dq);
  rt_.backend.tokens_to_heads(kh.bytes(), kt.bytes(), es, n * dq, 0, m_.s, m_.b, n, dq);
  rt_.backend.tokens_to_heads(vh.bytes(), vt.bytes(), es, n * dv, 0, m_.s, m_.b, n, dv);
  return {qh, kh, vh};
}

std::vector<Tensor> MlaUpProj::backward(SaveContext& ctx, const std::vector<Tensor>& dout) {
  const int64_t N = m_.s * m_.b, n = m_.n, dn = m_.dn, dr = m_.dr, dq = m_.dq, dv = m_.dv, dkv = dn + dv;
  const int es = kActElem(rt_);
  Tensor dqt = rt_.activation({N, n * dq}, path_ + ".query.tokens.grad");
  Tensor dkt = rt_.activation({N, n * dq}, path_ + ".key.tokens.grad");
  Tensor dvt = rt_.activation({N, n * dv}, path_ + ".value.tokens.grad");
  rt_.backend.heads_to_tokens(dqt.bytes(), dout.at(0).bytes(), es, n * dq, 0, m_.s, m_.b, n, dq);
  rt_.backend.heads_to_tokens(dkt.bytes(), dout.at(1).bytes(), es, n * dq, 0, m_.s, m_.b, n, dq);
  rt_.backend.heads_to_tokens(dvt.bytes(), dout.at(2).bytes(), es, n * dv, 0, m_.s, m_.b, n, dv);
  Tensor dq_up = rt_.activation({N, n * dq}, path_ + ".q_up.output.grad");
  Tensor dkv_up = rt_.activation({N, n * dkv}, path_ + ".kv_up.output.grad");
  Tensor dkpe = rt_.activation({N, dr}, path_ + ".k_pos_emb.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> dqv(rt_, dqt), dkv_(rt_, dkt), dvv(rt_, dvt);
    ComputeOut<T> dqo(rt_, dq_up), dkvo(rt_, dkv_up), dpo(rt_, dkpe);
    const T* R = param_data<T>(tables_.rope);
    // y = R_p x, so dx = R_p^T dy: row vectors dx = dy R_p.
    copy_columns(ops, tables_, N * n, dn, dqv.data(), dq, dqo.data(), dq);
    ops.gemm_batched(Trans::N, Trans::N, m_.b * n, dr, dr, dqv.data() + dn, dq, m_.b * n * dq, R, dr, dr * dr,
                     dqo.data() + dn, dq, m_.b * n * dq, m_.s, false);
    copy_columns(ops, tables_, N * n, dn, dkv_.data(), dq, dkvo.data(), dkv);
    copy_columns(ops, tables_, N * n, dv, dvv.data(), dv, dkvo.data() + dn, dkv);
    // d k_pe: the sum over this rank's heads in head order, then over TP ranks in rank order.
    for (int64_t i = 0; i < n; ++i)
      ops.gemm_batched(Trans::N, Trans::N, m_.b, dr, dr, dkv_.data() + i * dq + dn, n * dq, m_.b * n * dq, R, dr,
                       dr * dr, dpo.data(), dr, m_.b * dr, m_.s, i > 0);
    if (rt_.tp_group->size() > 1) rt_.all_reduce_sum(*rt_.tp_group, dpo.data(), N * dr);
    dqo.commit();
    dkvo.commit();
    dpo.commit();
  });
  Tensor dcq = q_up_.backward(ctx.child("q_up"), dq_up);
  Tensor dckv = kv_up_.backward(ctx.child("kv_up"), dkv_up);
  return {dcq, dckv, dkpe};
}

void MlaUpProj::parameters(std::vector<Parameter*>& out) {
  q_up_.parameters(out);
  kv_up_.parameters(out);
}

MlaAttention::MlaAttention(Runtime& rt, std::string path, bool recompute_core, bool recompute_up_proj, int layer)
    : rt_(rt),
      path_(std::move(path)),
      m_(MlaDims::from(rt)),
      recompute_core_(recompute_core),
      recompute_up_(recompute_up_proj),
      layer_(layer),
      tables_(make_tables(rt, path_, m_)),
      q_down_(m_.qr > 0 ? std::make_unique<Linear>(rt, path_ + ".linear_q_down_proj",
                                                   LinearSpec{m_.h, m_.qr, false, TpMode::none, 1})
                        : nullptr),
      q_norm_(m_.qr > 0 ? std::make_unique<LayerNorm>(rt, path_ + ".q_layernorm", m_.qr) : nullptr),
      kv_down_(rt, path_ + ".linear_kv_down_proj", {m_.h, m_.kvr + m_.dr, false, TpMode::none, 1}),
      kv_norm_(rt, path_ + ".kv_layernorm", m_.kvr),
      up_(rt, path_, m_, tables_),
      core_(rt, path_),
      proj_(rt, path_ + ".proj", {m_.a * m_.dv, m_.h, rt.config.model.add_bias_linear, TpMode::row, 1}) {}

namespace {
using UpCheckpoint = std::shared_ptr<OutputDiscardingCheckpoint>;
constexpr StashKey<UpCheckpoint> kUpCheckpoint{"mla.up_proj"};
}  // namespace

Tensor MlaAttention::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  const int64_t N = m_.s * m_.b, kvr = m_.kvr, dr = m_.dr;
  // Megatron-LM's qkv_linear group spans get_query_key_value_tensors: both
  // down-projections, the norms, the up-projections and RoPE. (The mutant closes it
  // after the q path, so the kv path's saves stay on device.)
  std::optional<OffloadManager::GroupScope> qkv_group;
  qkv_group.emplace(rt_.offload.get(), "qkv_linear", layer_);
  Tensor cq = x;
  if (q_down_) cq = q_norm_->forward(ctx.child("q_layernorm"), q_down_->forward(ctx.child("linear_q_down_proj"), x));
  if (fault_on(Fault::mla_qkv_group_q_only)) qkv_group.reset();
  Tensor kvc = kv_down_.forward(ctx.child("linear_kv_down_proj"), x);  // (N, kvr + dr)
  Tensor latent = rt_.activation({N, kvr}, path_ + ".kv_compressed");
  Tensor kpe = rt_.activation({N, dr}, path_ + ".k_pos_emb");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> cv(rt_, kvc);
    ComputeOut<T> lo(rt_, latent), po(rt_, kpe);
    copy_columns(ops, tables_, N, kvr, cv.data(), kvr + dr, lo.data(), kvr);
    copy_columns(ops, tables_, N, dr, cv.data() + kvr, kvr + dr, po.data(), dr);
    lo.commit();
    po.commit();
  });
  Tensor ckv = kv_norm_.forward(ctx.child("kv_layernorm"), latent);
  SaveContext& uctx = ctx.child("#up");
  std::vector<Tensor> qkv;
  UpCheckpoint ck;
  if (recompute_up_) {
    ck = std::make_shared<OutputDiscardingCheckpoint>(rt_.rng, up_, uctx);
    ctx.stash(kUpCheckpoint, ck);
    qkv = ck->forward({cq, ckv, kpe});
  } else {
    qkv = up_.forward(uctx, {cq, ckv, kpe});
  }
  qkv_group.reset();
  offload_commit(rt_, "qkv_linear", layer_);
  Tensor context;
  {
    auto group = offload_group(rt_, "core_attn", layer_);
    context = checkpoint::run_forward(recompute_core_, rt_.rng, core_, ctx.child("#core"), qkv).at(0);
  }
  offload_commit(rt_, "core_attn", layer_);
  // Megatron: discard_output_and_register_recompute(core_attn_out) once core attention saved q, k, v.
  if (recompute_up_ && ctx.enabled()) ck->discard_output_and_register_recompute(path_ + ".core.context");
  Tensor merged = rt_.activation({N, m_.n * m_.dv}, path_ + ".context");
  rt_.backend.heads_to_tokens(merged.bytes(), context.bytes(), kActElem(rt_), m_.n * m_.dv, 0, m_.s, m_.b, m_.n,
                              m_.dv);
  Tensor out;
  {
    auto group = offload_group(rt_, "attn_proj", layer_);
    out = proj_.forward(ctx.child("proj"), merged);
  }
  offload_commit(rt_, "attn_proj", layer_);
  return out;
}

Tensor MlaAttention::backward(SaveContext& ctx, const Tensor& dy) {
  const int64_t N = m_.s * m_.b, kvr = m_.kvr, dr = m_.dr;
  offload_backward_commit(rt_, "attn_proj", layer_);
  Tensor dmerged = proj_.backward(ctx.child("proj"), dy);
  offload_backward_start(rt_, "attn_proj", layer_);
  Tensor dcontext = rt_.activation({m_.b, m_.n, m_.s, m_.dv}, path_ + ".context.grad");
  rt_.backend.tokens_to_heads(dcontext.bytes(), dmerged.bytes(), kActElem(rt_), m_.n * m_.dv, 0, m_.s, m_.b, m_.n,
                              m_.dv);
  // The gradient of the core attention's output arrived: the up-projection recompute fires.
  // Its inputs are the qkv_linear group's, whose backward commit point comes later.
  if (recompute_up_) {
    offload_reload_on_demand(rt_, "qkv_linear", layer_);
    ctx.stashed(kUpCheckpoint)->recompute();
  }
  offload_backward_commit(rt_, "core_attn", layer_);
  auto dqkv = checkpoint::run_backward(recompute_core_, rt_.rng, core_, ctx.child("#core"), {dcontext});
  offload_backward_start(rt_, "core_attn", layer_);
  offload_backward_commit(rt_, "qkv_linear", layer_);
  auto dup = recompute_up_ ? ctx.stashed(kUpCheckpoint)->backward(dqkv) : up_.backward(ctx.child("#up"), dqkv);
  Tensor dlatent = kv_norm_.backward(ctx.child("kv_layernorm"), dup.at(1));
  Tensor dkvc = rt_.activation({N, kvr + dr}, path_ + ".linear_kv_down_proj.output.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    const ComputeIn<T> lv(rt_, dlatent), pv(rt_, dup.at(2));
    ComputeOut<T> o(rt_, dkvc);
    copy_columns(ops, tables_, N, kvr, lv.data(), kvr, o.data(), kvr + dr);
    copy_columns(ops, tables_, N, dr, pv.data(), dr, o.data() + kvr, kvr + dr);
    o.commit();
  });
  Tensor dx_kv = kv_down_.backward(ctx.child("linear_kv_down_proj"), dkvc);
  Tensor dx_q = dup.at(0);
  if (q_down_)
    dx_q = q_down_->backward(ctx.child("linear_q_down_proj"), q_norm_->backward(ctx.child("q_layernorm"), dx_q));
  Tensor dx = add(rt_, dx_q, dx_kv, path_ + ".input.grad");
  offload_backward_start(rt_, "qkv_linear", layer_);
  return dx;
}

void MlaAttention::parameters(std::vector<Parameter*>& out) {
  if (q_down_) {
    q_down_->parameters(out);
    q_norm_->parameters(out);
  }
  kv_down_.parameters(out);
  kv_norm_.parameters(out);
  up_.parameters(out);
  proj_.parameters(out);
}

}  // namespace rcts
