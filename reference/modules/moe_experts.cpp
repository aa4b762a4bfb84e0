#include "reference/modules/moe_experts.hpp"

#include <span>

#include "reference/core/faults.hpp"
#include "reference/modules/tensor_parallel.hpp"
#include "reference/recompute/output_discarding.hpp"
#include "reference/runtime/compute.hpp"

namespace rcts {

namespace {
using CheckpointPtr = std::shared_ptr<OutputDiscardingCheckpoint>;
constexpr StashKey<EtpPlan> kEtpPlan{"moe.etp_plan"};
constexpr StashKey<CheckpointPtr> kActCheckpoint{"moe.act_checkpoint"};

int64_t expert_ffn(const Config& c) {
  return c.model.moe_ffn_hidden_size > 0 ? c.model.moe_ffn_hidden_size : c.model.ffn_hidden_size;
}

// Row offsets of per-expert blocks of `counts` rows.
std::vector<int64_t> offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> off(counts.size() + 1, 0);
  for (size_t j = 0; j < counts.size(); ++j) off[j + 1] = off[j] + counts[j];
  return off;
}
}  // namespace

// --- ExpertActivation ----------------------------------------------------------------

ExpertActivation::ExpertActivation(Runtime& rt, const std::string& path, bool swiglu, std::string count_path)
    : rt_(rt),
      count_path_(std::move(count_path)),
      act_(rt, path + ".act", swiglu),
      dropout_{path + ".dropout", "expert", rt.config.model.moe_expert_dropout} {}

Tensor ExpertActivation::forward(SaveContext& ctx, const Tensor& a) {
  if (!count_path_.empty()) rt_.counters.count_forward(count_path_);
  Tensor g = act_.forward(ctx.child("act"), a);
  if (!dropout_active(rt_, dropout_.p)) return g;
  // Expert-internal dropout draws from the expert-parallel stream (design §5).
  auto fork = rt_.rng.tracker().fork(kExpertParallelRng);
  return dropout_forward(rt_, ctx.child("dropout"), dropout_, g);
}

Tensor ExpertActivation::backward(SaveContext& ctx, const Tensor& dg) {
  Tensor d = dropout_backward(rt_, ctx.child("dropout"), dropout_, dg);
  return act_.backward(ctx.child("act"), d);
}

// --- MoeExperts --------------------------------------------------------------------

MoeExperts::MoeExperts(Runtime& rt, const std::string& moe_path, bool recompute_act)
    : rt_(rt),
      path_(moe_path + ".experts"),
      grouped_(rt.config.model.moe_grouped_gemm),
      recompute_act_(recompute_act),
      swiglu_(rt.config.model.activation == "swiglu"),
      hidden_(rt.config.model.hidden_size) {
  const auto& m = rt.config.model;
  const auto& par = rt.config.parallel;
  Communicator& ep = *rt.ep_group;
  Communicator& etp = *rt.etp_group;
  RCTS_CHECK(ep.size() == par.expert_model_parallel_size,
             moe_path + ": parallel.expert_model_parallel_size = " + std::to_string(par.expert_model_parallel_size) +
                 " but the EP group has " + std::to_string(ep.size()) + " rank(s)");
  RCTS_CHECK(etp.size() == par.expert_tensor_parallel_size,
             moe_path + ": parallel.expert_tensor_parallel_size = " + std::to_string(par.expert_tensor_parallel_size) +
                 " but the ETP group has " + std::to_string(etp.size()) + " rank(s)");
  RCTS_CHECK(m.num_moe_experts % ep.size() == 0,
             moe_path + ": model.num_moe_experts = " + std::to_string(m.num_moe_experts) +
                 " does not split over parallel.expert_model_parallel_size = " + std::to_string(ep.size()));
  RCTS_CHECK(!recompute_act || grouped_, moe_path + ": recompute module moe_act needs model.moe_grouped_gemm = true");
  const int64_t F = expert_ffn(rt.config);
  RCTS_CHECK(F % etp.size() == 0, moe_path + ": expert intermediate size " + std::to_string(F) +
                                      " (model.moe_ffn_hidden_size, or ffn_hidden_size) does not split over " +
                                      std::to_string(etp.size()) + " expert-tensor-parallel ranks");
  const int blocks = swiglu_ ? 2 : 1;
  const int64_t fc1_rows = blocks * F;
  ffn_local_ = F / etp.size();
  fc1_rows_local_ = blocks * ffn_local_;
  const int64_t L = m.num_moe_experts / ep.size();
  first_ = ep.rank() * L;
  const auto fc1_rows_kept = tp_row_blocks(fc1_rows, blocks, etp.rank(), etp.size());
  const Ranges fc2_cols{{etp.rank() * ffn_local_, (etp.rank() + 1) * ffn_local_}};
  experts_.resize(static_cast<size_t>(L));
  for (int64_t j = 0; j < L; ++j) {
    Expert& x = experts_[static_cast<size_t>(j)];
    x.global = first_ + j;
    const std::string base = path_ + "." + std::to_string(x.global);
    x.fc1 = make_parameter_slice(rt, base + ".fc1.weight", {fc1_rows, hidden_}, fc1_rows_kept, {}, Init::uniform_fan_in,
                                 hidden_);
    x.fc2 = make_parameter_slice(rt, base + ".fc2.weight", {hidden_, F}, {}, fc2_cols, Init::uniform_fan_in, F);
    if (!grouped_) x.act = std::make_unique<ExpertActivation>(rt, base, swiglu_, "");
  }
  if (grouped_) grouped_act_ = std::make_unique<ExpertActivation>(rt, path_, swiglu_, path_ + ".act");
}

void MoeExperts::parameters(std::vector<Parameter*>& out) {
  for (auto& x : experts_) {
    out.push_back(&x.fc1);
    out.push_back(&x.fc2);
  }
}

Tensor MoeExperts::forward(SaveContext& ctx, const Tensor& x, const std::vector<int64_t>& counts) {
  RCTS_CHECK(static_cast<int64_t>(counts.size()) == local_experts(),
             path_ + ": " + std::to_string(counts.size()) + " row counts for " + std::to_string(local_experts()) +
                 " local experts");
  int64_t rows = 0;
  for (auto c : counts) rows += c;
  RCTS_CHECK(x.shape().size() == 2 && x.dim(0) == rows && x.dim(1) == hidden_,
             path_ + ": input '" + x.name() + "' has shape " + shape_str(x.shape()) + ", expected (" +
                 std::to_string(rows) + ", " + std::to_string(hidden_) + ")");
  EtpPlan plan = make_etp_plan(*rt_.etp_group, counts);
  ctx.stash(kEtpPlan, plan);
  const Tensor xg = etp_gather(rt_, *rt_.etp_group, plan, x, path_ + ".fc1.input");
  return with_compute_type(rt_.config.gradcheck(), [&]<typename T>() { return forward_t<T>(ctx, plan, xg); });
}

int MoeExperts::layer_index() const {
  // path_ is "layers.<i>.moe.experts"; unit tests may use other paths (layer 0).
  if (path_.rfind("layers.", 0) != 0) return 0;
  return std::stoi(path_.substr(7));
}

template <typename T>
Tensor MoeExperts::forward_t(SaveContext& ctx, const EtpPlan& plan, const Tensor& xg) {
  const int64_t h = hidden_, w1 = fc1_rows_local_, fl = ffn_local_;
  const auto off = offsets(plan.gathered_counts);
  const int64_t L = local_experts();
  auto yp = rt_.workspace.zeros<T>(static_cast<size_t>(plan.gathered() * h));

  // fc1 of expert j over rows [begin, begin + n) of x (a (n, h) block) into a.
  auto& ops = rt_.ops<T>();
  auto fc1 = [&](int64_t j, const T* x, T* a, int64_t n) {
    ops.gemm(Trans::N, Trans::T, n, w1, h, x, h, param_data<T>(experts_[static_cast<size_t>(j)].fc1.value), h, a, w1,
             false);
  };
  auto fc2 = [&](int64_t j, const T* g, T* y, int64_t n) {
    ops.gemm(Trans::N, Trans::T, n, h, fl, g, fl, param_data<T>(experts_[static_cast<size_t>(j)].fc2.value), fl, y, h,
             false);
  };

  if (grouped_) {
    const int layer = layer_index();
    Tensor a = rt_.activation({plan.gathered(), w1}, path_ + ".fc1.output");
    {
      // Offload group expert_fc1: the permuted hidden states, released once fc1 ran.
      auto group = offload_group(rt_, "expert_fc1", layer);
      ctx.child("fc1").save(xg, "input");
      const ComputeIn<T> xv(rt_, xg);
      ComputeOut<T> av(rt_, a);
      for (int64_t j = 0; j < L; ++j)
        fc1(j, xv.data() + off[j] * h, av.data() + off[j] * w1, plan.gathered_counts[static_cast<size_t>(j)]);
      av.commit();
    }
    offload_commit(rt_, "expert_fc1", layer);
    SaveContext& actx = ctx.child("#act");
    CheckpointPtr ck;
    Tensor g;
    {
      // Offload group moe_act: the fc1 output (the activation's input).
      auto group = offload_group(rt_, "moe_act", layer);
      if (recompute_act_) {
        ck = std::make_shared<OutputDiscardingCheckpoint>(rt_.rng, *grouped_act_, actx);
        ctx.stash(kActCheckpoint, ck);
        g = ck->forward({a}).at(0);
      } else {
        g = grouped_act_->forward(actx, a);
      }
    }
    const bool early = fault_on(Fault::moe_act_commit_before_fc2);
    if (early) offload_commit(rt_, "moe_act", layer);
    ctx.child("fc2").save(g, "input");
    {
      const ComputeIn<T> gv(rt_, g);
      for (int64_t j = 0; j < L; ++j)
        fc2(j, gv.data() + off[j] * fl, yp.data() + off[j] * h, plan.gathered_counts[static_cast<size_t>(j)]);
    }
    // Delayed commit (after fc2): in backward the fc1 output is back on device before
    // moe_act's recompute fires.
    if (!early) offload_commit(rt_, "moe_act", layer);
    // fc2 consumed (and saved) the activation output: release it until backward.
    if (ck && ctx.enabled()) ck->discard_output_and_register_recompute(path_ + ".fc2.output");
  } else {
    rt_.counters.count_forward(path_ + ".act");
    for (int64_t j = 0; j < L; ++j) {
      const int64_t n = plan.gathered_counts[static_cast<size_t>(j)];
      if (n == 0) continue;
      Expert& ex = experts_[static_cast<size_t>(j)];
      const std::string base = path_ + "." + std::to_string(ex.global);
      SaveContext& ectx = ctx.child(std::to_string(ex.global));
      Tensor xj = xg.rows(off[j], off[j] + n).clone(rt_.place(), base + ".fc1.input");
      ectx.child("fc1").save(xj, "input");
      Tensor a = rt_.activation({n, w1}, base + ".fc1.output");
      {
        const ComputeIn<T> xv(rt_, xj);
        ComputeOut<T> av(rt_, a);
        fc1(j, xv.data(), av.data(), n);
        av.commit();
      }
      Tensor g = ex.act->forward(ectx.child("#act"), a);
      ectx.child("fc2").save(g, "input");
      const ComputeIn<T> gv(rt_, g);
      fc2(j, gv.data(), yp.data() + off[j] * h, n);
    }
  }

  Tensor y = rt_.activation({plan.own(), h}, path_ + ".fc2.output");
  ComputeOut<T> yo(rt_, y);
  etp_reduce_own_rows(rt_, *rt_.etp_group, plan, std::span<T>(yp.data(), yp.size()), h, std::span<T>(yo.data(), yo.size()));
  yo.commit();
  return y;
}

Tensor MoeExperts::backward(SaveContext& ctx, const Tensor& dy) {
  const EtpPlan& plan = ctx.stashed(kEtpPlan);
  RCTS_CHECK(dy.shape().size() == 2 && dy.dim(0) == plan.own() && dy.dim(1) == hidden_,
             path_ + ": output gradient '" + dy.name() + "' has shape " + shape_str(dy.shape()) + ", expected (" +
                 std::to_string(plan.own()) + ", " + std::to_string(hidden_) + ")");
  const Tensor dyg = etp_gather(rt_, *rt_.etp_group, plan, dy, path_ + ".fc2.output.grad");
  return with_compute_type(rt_.config.gradcheck(), [&]<typename T>() { return backward_t<T>(ctx, plan, dyg); });
}

template <typename T>
Tensor MoeExperts::backward_t(SaveContext& ctx, const EtpPlan& plan, const Tensor& dyg) {
  const int64_t h = hidden_, w1 = fc1_rows_local_, fl = ffn_local_;
  const auto off = offsets(plan.gathered_counts);
  const int64_t L = local_experts();
  const ComputeIn<T> dyv(rt_, dyg);
  auto dxp = rt_.workspace.zeros<T>(static_cast<size_t>(plan.gathered() * h));

  // fc2 backward of expert j over n rows: dg = dy W2, dW2 += dy^T g.
  auto& ops = rt_.ops<T>();
  auto fc2_back = [&](int64_t j, const T* dy, const T* g, T* dg, int64_t n) {
    Expert& ex = experts_[static_cast<size_t>(j)];
    ops.gemm(Trans::N, Trans::N, n, fl, h, dy, h, param_data<T>(ex.fc2.value), fl, dg, fl, false);
    ops.gemm(Trans::T, Trans::N, h, fl, n, dy, h, g, fl, param_data<T>(ex.fc2.grad), fl, true);
  };
  // fc1 backward: dx = da W1 (partial over ETP), dW1 += da^T x.
  auto fc1_back = [&](int64_t j, const T* da, const T* x, T* dx, int64_t n) {
    Expert& ex = experts_[static_cast<size_t>(j)];
    ops.gemm(Trans::N, Trans::N, n, h, w1, da, w1, param_data<T>(ex.fc1.value), h, dx, h, false);
    ops.gemm(Trans::T, Trans::N, w1, h, n, da, w1, x, h, param_data<T>(ex.fc1.grad), h, true);
  };

  if (grouped_) {
    const bool late = fault_on(Fault::late_output_recompute);
    CheckpointPtr ck = recompute_act_ ? ctx.stashed(kActCheckpoint) : nullptr;
    const int layer = layer_index();
    const bool early = fault_on(Fault::moe_act_commit_before_fc2);
    if (!early) offload_backward_commit(rt_, "moe_act", layer);
    // The gradient of the activation's consumer arrived: recompute before fc2's backward.
    if (ck && !late) ck->recompute();
    const Tensor g = ctx.child("fc2").load("input");
    Tensor dg = rt_.activation({plan.gathered(), fl}, path_ + ".fc2.input.grad");
    {
      const ComputeIn<T> gv(rt_, g);
      ComputeOut<T> dgv(rt_, dg);
      for (int64_t j = 0; j < L; ++j)
        fc2_back(j, dyv.data() + off[j] * h, gv.data() + off[j] * fl, dgv.data() + off[j] * fl,
                 plan.gathered_counts[static_cast<size_t>(j)]);
      dgv.commit();
    }
    if (early) offload_backward_commit(rt_, "moe_act", layer);
    if (ck && late) ck->recompute();
    const Tensor da = ck ? ck->backward({dg}).at(0) : grouped_act_->backward(ctx.child("#act"), dg);
    offload_backward_start(rt_, "moe_act", layer);
    const ComputeIn<T> dav(rt_, da);
    offload_backward_commit(rt_, "expert_fc1", layer);
    const Tensor x = ctx.child("fc1").load("input");
    const ComputeIn<T> xv(rt_, x);
    for (int64_t j = 0; j < L; ++j)
      fc1_back(j, dav.data() + off[j] * w1, xv.data() + off[j] * h, dxp.data() + off[j] * h,
               plan.gathered_counts[static_cast<size_t>(j)]);
    offload_backward_start(rt_, "expert_fc1", layer);
  } else {
    for (int64_t j = 0; j < L; ++j) {
      const int64_t n = plan.gathered_counts[static_cast<size_t>(j)];
      if (n == 0) continue;
      Expert& ex = experts_[static_cast<size_t>(j)];
      const std::string base = path_ + "." + std::to_string(ex.global);
      SaveContext& ectx = ctx.child(std::to_string(ex.global));
      const Tensor g = ectx.child("fc2").load("input");
      Tensor dg = rt_.activation({n, fl}, base + ".fc2.input.grad");
      {
        const ComputeIn<T> gv(rt_, g);
        ComputeOut<T> dgv(rt_, dg);
        fc2_back(j, dyv.data() + off[j] * h, gv.data(), dgv.data(), n);
        dgv.commit();
      }
      const Tensor da = ex.act->backward(ectx.child("#act"), dg);
      const ComputeIn<T> dav(rt_, da);
      const Tensor x = ectx.child("fc1").load("input");
      const ComputeIn<T> xv(rt_, x);
      fc1_back(j, dav.data(), xv.data(), dxp.data() + off[j] * h, n);
    }
  }

  Tensor dx = rt_.activation({plan.own(), h}, path_ + ".fc1.input.grad");
  ComputeOut<T> dxo(rt_, dx);
  etp_reduce_own_rows(rt_, *rt_.etp_group, plan, std::span<T>(dxp.data(), dxp.size()), h, std::span<T>(dxo.data(), dxo.size()));
  dxo.commit();
  return dx;
}

}  // namespace rcts
