#include "reference/modules/moe_router.hpp"

#include "reference/runtime/compute.hpp"

namespace rcts {

MoeRouter::MoeRouter(Runtime& rt, const std::string& moe_path)
    : rt_(rt),
      path_(moe_path + ".router"),
      aux_key_(moe_path + ".aux_loss"),
      experts_(rt.config.model.num_moe_experts),
      hidden_(rt.config.model.hidden_size),
      topk_(rt.config.model.moe_router_topk) {
  RCTS_CHECK(experts_ >= 1, path_ + ": model.num_moe_experts = " + std::to_string(experts_) + " must be >= 1");
  RCTS_CHECK(topk_ >= 1 && topk_ <= experts_, path_ + ": model.moe_router_topk = " + std::to_string(topk_) +
                                                  " must be in [1, model.num_moe_experts = " +
                                                  std::to_string(experts_) + "]");
  weight_ = make_parameter(rt, path_ + ".weight", {experts_, hidden_}, Init::uniform_fan_in, hidden_);
  weight_.sequence_parallel = rt.config.parallel.sequence_parallel && rt.tp_group->size() > 1;
}

RouterOutput MoeRouter::forward(SaveContext& ctx, const Tensor& x) {
  RCTS_CHECK(x.shape().size() == 2 && x.dim(1) == hidden_,
             path_ + ": input '" + x.name() + "' has shape " + shape_str(x.shape()) + ", expected (tokens, " +
                 std::to_string(hidden_) + ")");
  const int64_t tokens = x.dim(0);
  RouterOutput r;
  r.topk = Tensor::uninitialized({tokens, topk_}, DType::i32, rt_.place(), path_ + ".topk");
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    r.probs = Tensor::uninitialized({tokens, experts_}, dtype_of<T>(), rt_.place(), path_ + ".probs");
    r.weights = Tensor::uninitialized({tokens, topk_}, dtype_of<T>(), rt_.place(), path_ + ".weights");
    const ComputeIn<T> xv(rt_, x);
    auto logits = rt_.workspace.take<T>(static_cast<size_t>(tokens * experts_));
    ops.gemm(Trans::N, Trans::T, tokens, experts_, hidden_, xv.data(), hidden_, param_data<T>(weight_.value), hidden_,
             logits.data(), experts_, false);
    T* p = r.probs.data<T>();
    ops.row_softmax_forward(p, logits.data(), tokens, experts_);
    ops.topk_select(r.topk.data<int32_t>(), r.weights.data<T>(), p, tokens, experts_, topk_);
    if (rt_.training())
      rt_.add_side_effect(aux_key_, static_cast<double>(ops.aux_loss(p, r.topk.data<int32_t>(), tokens, experts_, topk_,
                                                                     rt_.config.model.moe_aux_loss_coeff)));
  });
  ctx.save(x, "input");
  ctx.save(r.probs, "probs");
  return r;
}

Tensor MoeRouter::backward(SaveContext& ctx, const Tensor& topk, const Tensor& dweights) {
  const Tensor x = ctx.load("input");
  const Tensor probs = ctx.load("probs");
  const int64_t tokens = x.dim(0);
  Tensor dx;
  with_compute_type(rt_.config.gradcheck(), [&]<typename T>() {
    auto& ops = rt_.ops<T>();
    auto dprobs = rt_.workspace.take<T>(static_cast<size_t>(tokens * experts_));
    ops.topk_scatter(dprobs.data(), topk.data<int32_t>(), dweights.data<T>(), tokens, experts_, topk_);
    auto dlogits = rt_.workspace.take<T>(dprobs.size());
    ops.row_softmax_backward(dlogits.data(), dprobs.data(), probs.data<T>(), tokens, experts_);
    const ComputeIn<T> xv(rt_, x);
    // dW (E, h) += dlogits^T (E, tokens) . x (tokens, h): tokens in GEMM k order.
    ops.gemm(Trans::T, Trans::N, experts_, hidden_, tokens, dlogits.data(), experts_, xv.data(), hidden_,
             param_data<T>(weight_.grad), hidden_, true);
    dx = Tensor::uninitialized({tokens, hidden_}, dtype_of<T>(), rt_.place(), path_ + ".input.grad");
    // dx (tokens, h) = dlogits (tokens, E) . W (E, h)
    ops.gemm(Trans::N, Trans::N, tokens, hidden_, experts_, dlogits.data(), experts_, param_data<T>(weight_.value),
             hidden_, dx.data<T>(), hidden_, false);
  });
  return dx;
}

}  // namespace rcts
