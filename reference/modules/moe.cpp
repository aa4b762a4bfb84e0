#include "reference/modules/moe.hpp"

#include <algorithm>
#include <optional>

#include "reference/modules/compute.hpp"
#include "reference/recompute/checkpoint_function.hpp"

namespace rcts {

namespace {

constexpr const char* kPlan = "moe.dispatch_plan";

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
  if (!c.run.training || c.recompute.recompute_granularity != "selective") return r;
  const auto& v = c.recompute.recompute_modules;
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
  DispatchPlan plan = make_dispatch_plan(ep, r.topk, rt_.config.model.num_moe_experts, path_);
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
    const T* w = r.weights.data<T>();
    const ComputeIn<T> yv(rt_.workspace, ys);
    std::optional<ComputeIn<T>> sv;
    if (shared_) sv.emplace(rt_.workspace, shared);
    ComputeOut<T> out(rt_.workspace, y);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t i = 0; i < h; ++i) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t row = plan.position[static_cast<size_t>(t * K + k)];
          acc = acc + w[t * K + k] * yv[static_cast<size_t>(row * h + i)];
        }
        if (shared_) acc = acc + (*sv)[static_cast<size_t>(t * h + i)];
        out[static_cast<size_t>(t * h + i)] = acc;
      }
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
  const DispatchPlan& plan = ctx.stashed<DispatchPlan>(kPlan);
  SaveContext& cctx = ctx.child("combine");
  const Tensor topk = cctx.load(0);
  const Tensor weights = cctx.load(1);
  const Tensor ys = cctx.load(2);
  const int64_t tokens = plan.tokens, K = plan.topk, h = rt_.config.model.hidden_size;
  RCTS_CHECK(dy.shape().size() == 2 && dy.dim(0) == tokens && dy.dim(1) == h,
             path_ + ": output gradient '" + dy.name() + "' has shape " + shape_str(dy.shape()) + ", expected (" +
                 std::to_string(tokens) + ", " + std::to_string(h) + ")");
  Communicator& ep = *rt_.ep_group;

  // Combine backward: gradients of the expert outputs (send order) and of the weights.
  Tensor dys = rt_.activation({plan.assignments(), h}, path_ + ".combine.expert_output.grad");
  Tensor dweights;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    const T* w = weights.data<T>();
    const ComputeIn<T> dyv(rt_.workspace, dy), yv(rt_.workspace, ys);
    ComputeOut<T> dysv(rt_.workspace, dys);
    dweights = Tensor::empty({tokens, K}, dtype_of<T>(), rt_.place(), path_ + ".combine.weights.grad");
    T* dw = dweights.data<T>();
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t a = t * K + k, row = plan.position[static_cast<size_t>(a)];
        T dot = 0;
        for (int64_t i = 0; i < h; ++i) {
          const T g = dyv[static_cast<size_t>(t * h + i)];
          dysv[static_cast<size_t>(row * h + i)] = w[a] * g;
          dot = dot + g * yv[static_cast<size_t>(row * h + i)];
        }
        dw[a] = dot;
      }
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
    const ComputeIn<T> sv(rt_.workspace, dxs);
    const T* rv = dxr.data<T>();
    std::optional<ComputeIn<T>> shv;
    if (shared_) shv.emplace(rt_.workspace, dxsh);
    ComputeOut<T> out(rt_.workspace, dx);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t i = 0; i < h; ++i) {
        T acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t row = plan.position[static_cast<size_t>(t * K + k)];
          acc = acc + sv[static_cast<size_t>(row * h + i)];
        }
        acc = acc + rv[t * h + i];
        if (shared_) acc = acc + (*shv)[static_cast<size_t>(t * h + i)];
        out[static_cast<size_t>(t * h + i)] = acc;
      }
    out.commit();
  });
  ctx.clear();
  return dx;
}

}  // namespace rcts
