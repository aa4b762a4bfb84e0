#include "reference/modules/moe.hpp"

#include <algorithm>
#include <optional>

#include "reference/config/validate.hpp"
#include "reference/runtime/compute.hpp"
#include "reference/recompute/checkpoint_function.hpp"

namespace rcts {

namespace {

constexpr StashKey<DispatchPlan> kPlan{"moe.dispatch_plan"};

// Megatron-LM: "When using MoE with TP, sequence parallelism must be enabled".
std::string checked_path(const Runtime& rt, std::string path) {
  const auto& p = rt.config.parallel;
  RCTS_CHECK(rt.tp_group->size() == 1 || p.sequence_parallel,
             path + ": MoE with parallel.tensor_model_parallel_size = " + std::to_string(rt.tp_group->size()) +
                 " needs parallel.sequence_parallel = true (each rank routes its own sequence shard)");
  RCTS_CHECK(rt.config.model.num_moe_experts >= 1,
             path + ": a MoE layer needs model.num_moe_experts >= 1 (is " +
                 std::to_string(rt.config.model.num_moe_experts) + ")");
  return path;
}

}  // namespace

MoeRecompute MoeRecompute::from(const Config& c) {
  MoeRecompute r;
  const RecomputeConfig e = effective_recompute(c.recompute);  // the moe_layer_recompute alias applied
  if (!c.run.training || e.recompute_granularity != "selective") return r;
  const auto& v = e.recompute_modules;
  auto has = [&](const char* m) { return std::find(v.begin(), v.end(), m) != v.end(); };
  r.shared_experts = has("shared_experts");
  r.moe_act = has("moe_act");
  return r;
}

// --- MoeLayer ------------------------------------------------------------------------

MoeLayer::MoeLayer(Runtime& rt, std::string path)
    : rt_(rt),
      path_(checked_path(rt, std::move(path))),
      recompute_(MoeRecompute::from(rt.config)),
      router_(rt, path_),
      experts_(rt, path_, recompute_.moe_act) {
  const int64_t s = rt.config.model.moe_shared_expert_intermediate_size;
  if (s > 0) shared_ = std::make_unique<Mlp>(rt, path_ + ".shared_experts", s, /*bias=*/false);
}

void MoeLayer::parameters(std::vector<Parameter*>& out) {
  router_.parameters(out);
  experts_.parameters(out);
  if (shared_) shared_->parameters(out);
}

Tensor MoeLayer::forward(SaveContext& ctx, const Tensor& x) {
  rt_.counters.count_forward(path_);
  const int64_t h = rt_.config.model.hidden_size;
  RCTS_CHECK(x.shape().size() == 2 && x.dim(1) == h, path_ + ": input '" + x.name() + "' has shape " +
                                                         shape_str(x.shape()) + ", expected (tokens, " +
                                                         std::to_string(h) + ")");
  const int64_t tokens = x.dim(0), K = rt_.config.model.moe_router_topk;
  Communicator& ep = *rt_.ep_group;

  RouterOutput r = router_.forward(ctx.child("router"), x);
  DispatchPlan plan = make_dispatch_plan(ep, rt_.host_readable(r.topk), rt_.config.model.num_moe_experts, path_);
  const Tensor xs = gather_rows(rt_, x, plan.send_token, path_ + ".dispatch.input");
  const Tensor xe = dispatch_rows(rt_, ep, plan, xs, path_ + ".experts.input");
  const Tensor ye = experts_.forward(ctx.child("experts"), xe, plan.expert_counts);
  const Tensor ys = return_rows(rt_, ep, plan, ye, path_ + ".combine.expert_output");

  Tensor shared;
  if (shared_) {
    SaveContext& sctx = ctx.child("shared_experts").child("#body");
    shared = checkpoint::run_forward(recompute_.shared_experts, rt_.rng, *shared_, sctx, {x}).at(0);
  }

  Tensor y = rt_.activation({tokens, h}, path_ + ".output");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> yv(rt_, ys);
    std::optional<ComputeIn<T>> sv;
    if (shared_) sv.emplace(rt_, shared);
    ComputeOut<T> out(rt_, y);
    rt_.ops<T>().moe_combine(out.data(), r.weights.data<T>(), yv.data(), plan.position, sv ? sv->data() : nullptr,
                             tokens, K, h);
    out.commit();
  });

  SaveContext& cctx = ctx.child("combine");
  cctx.save(r.topk, "topk_index");
  cctx.save(r.weights, "weights");
  cctx.save(ys, "expert_output");
  ctx.stash(kPlan, std::move(plan));
  return y;
}

Tensor MoeLayer::backward(SaveContext& ctx, const Tensor& dy) {
  const DispatchPlan& plan = ctx.stashed(kPlan);
  SaveContext& cctx = ctx.child("combine");
  const Tensor topk = cctx.load("topk_index");
  const Tensor weights = cctx.load("weights");
  const Tensor ys = cctx.load("expert_output");
  const int64_t tokens = plan.tokens, K = plan.topk, h = rt_.config.model.hidden_size;
  RCTS_CHECK(dy.shape().size() == 2 && dy.dim(0) == tokens && dy.dim(1) == h,
             path_ + ": output gradient '" + dy.name() + "' has shape " + shape_str(dy.shape()) + ", expected (" +
                 std::to_string(tokens) + ", " + std::to_string(h) + ")");
  Communicator& ep = *rt_.ep_group;

  // Combine backward: gradients of the expert outputs (send order) and of the weights.
  Tensor dys = rt_.activation({plan.assignments(), h}, path_ + ".combine.expert_output.grad");
  Tensor dweights;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> dyv(rt_, dy), yv(rt_, ys);
    ComputeOut<T> dysv(rt_, dys);
    dweights = Tensor::uninitialized({tokens, K}, dtype_of<T>(), rt_.place(), path_ + ".combine.weights.grad");
    rt_.ops<T>().moe_combine_backward(dysv.data(), dweights.data<T>(), dyv.data(), weights.data<T>(), yv.data(),
                                      plan.position, tokens, K, h);
    dysv.commit();
  });

  // Expert gradients travel the forward's dispatch path and come back in send order.
  const Tensor dye = dispatch_rows(rt_, ep, plan, dys, path_ + ".experts.output.grad");
  const Tensor dxe = experts_.backward(ctx.child("experts"), dye);
  const Tensor dxs = return_rows(rt_, ep, plan, dxe, path_ + ".dispatch.input.grad");
  const Tensor dxr = router_.backward(ctx.child("router"), topk, dweights);

  Tensor dxsh;
  if (shared_) {
    SaveContext& sctx = ctx.child("shared_experts").child("#body");
    dxsh = checkpoint::run_backward(recompute_.shared_experts, rt_.rng, *shared_, sctx, {dy}).at(0);
  }

  Tensor dx = rt_.activation({tokens, h}, path_ + ".input.grad");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const ComputeIn<T> sv(rt_, dxs);
    std::optional<ComputeIn<T>> shv;
    if (shared_) shv.emplace(rt_, dxsh);
    ComputeOut<T> out(rt_, dx);
    rt_.ops<T>().moe_input_grad(out.data(), sv.data(), plan.position, dxr.data<T>(), shv ? shv->data() : nullptr,
                                tokens, K, h);
    out.commit();
  });
  ctx.clear();
  return dx;
}

}  // namespace rcts
