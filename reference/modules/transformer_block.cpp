#include "reference/modules/transformer_block.hpp"

#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_function.hpp"

namespace rcts {

int64_t saved_bytes_now(const MemoryTracker& m) {
  return m.category(Domain::device, Category::saved_activation).current +
         m.category(Domain::device, Category::checkpoint_input).current;
}

class TransformerBlock::Chunk final : public Region {
 public:
  Chunk(std::vector<std::unique_ptr<TransformerLayer>>& layers, Segment seg) : layers_(layers), seg_(seg) {}
  std::vector<std::string> input_names() const override {
    return {layers_[static_cast<size_t>(seg_.begin)]->path() + ".checkpoint.input"};
  }
  std::vector<Tensor> forward(SaveContext& ctx, const std::vector<Tensor>& in) override {
    Tensor h = in.at(0);
    for (int i = seg_.begin; i < seg_.end; ++i) {
      auto& layer = *layers_[static_cast<size_t>(i)];
      // Mutant (Megatron-LM PR #290): every layer of the chunk gets the chunk input.
      const Tensor& x = fault_on(Fault::uniform_feeds_chunk_input) ? in.at(0) : h;
      h = layer.forward(ctx.child(layer.path()), x);
    }
    return {h};
  }
  std::vector<Tensor> backward(SaveContext& ctx, const std::vector<Tensor>& dout) override {
    Tensor d = dout.at(0);
    for (int i = seg_.end - 1; i >= seg_.begin; --i) {
      auto& layer = *layers_[static_cast<size_t>(i)];
      d = layer.backward(ctx.child(layer.path()), d);
    }
    return {d};
  }

 private:
  std::vector<std::unique_ptr<TransformerLayer>>& layers_;
  Segment seg_;
};

TransformerBlock::TransformerBlock(Runtime& rt) : rt_(rt), plan_(recompute_plan(rt.config, rt.pp_rank)) {
  // The stage's layers under their global indices (design §16); all of them at pp = 1.
  const StageLayers stage = stage_layers(rt.config, rt.pp_rank);
  for (int i = 0; i < stage.count; ++i) layers_.push_back(std::make_unique<TransformerLayer>(rt, stage.first + i));
  for (const auto& seg : plan_) chunks_.push_back(std::make_unique<Chunk>(layers_, seg));
  saved_per_layer_.assign(layers_.size(), 0);
}

TransformerBlock::~TransformerBlock() = default;

Tensor TransformerBlock::forward(SaveContext& ctx, const Tensor& x) {
  Tensor h = x;
  for (size_t g = 0; g < plan_.size(); ++g) {
    const int64_t before = saved_bytes_now(rt_.memory);
    SaveContext& sctx = ctx.child("#segment" + std::to_string(g));
    const CheckpointOptions options{rt_.config.recompute.distribute_saved_activations, rt_.tp_group};
    h = checkpoint::run_forward(plan_[g].checkpointed, rt_.rng, *chunks_[g], sctx, {h}, options).at(0);
    for (int i = plan_[g].begin; i < plan_[g].end; ++i) saved_per_layer_[static_cast<size_t>(i)] = 0;
    saved_per_layer_[static_cast<size_t>(plan_[g].begin)] = saved_bytes_now(rt_.memory) - before;
  }
  return h;
}

Tensor TransformerBlock::backward(SaveContext& ctx, const Tensor& dy) {
  Tensor d = dy;
  for (size_t g = plan_.size(); g-- > 0;) {
    SaveContext& sctx = ctx.child("#segment" + std::to_string(g));
    d = checkpoint::run_backward(plan_[g].checkpointed, rt_.rng, *chunks_[g], sctx, {d}).at(0);
  }
  return d;
}

void TransformerBlock::parameters(std::vector<Parameter*>& out) {
  for (auto& l : layers_) l->parameters(out);
}

}  // namespace rcts
