// TransformerBlock: L layers run in the segments of the recompute plan. A
// checkpointed segment (full recompute) is one CheckpointFunction over its layers.
// The block measures the saved bytes (saved_activation + checkpoint_input on the
// device) that each segment adds in forward and attributes them to the segment's
// first layer, so memory checks can compare per-layer bytes with the analytic model.
#pragma once
#include <memory>

#include "reference/modules/transformer_layer.hpp"
#include "reference/recompute/plan.hpp"

namespace rcts {

class TransformerBlock final : public Module {
 public:
  explicit TransformerBlock(Runtime& rt);
  ~TransformerBlock() override;
  using Module::backward;
  using Module::forward;
  Tensor forward(SaveContext& ctx, const Tensor& x) override;
  Tensor backward(SaveContext& ctx, const Tensor& dy) override;
  void parameters(std::vector<Parameter*>& out) override;

  const std::vector<Segment>& plan() const { return plan_; }
  // Saved bytes per layer measured in the last forward.
  const std::vector<int64_t>& saved_bytes_per_layer() const { return saved_per_layer_; }

 private:
  class Chunk;  // a Region over layers [begin, end)
  Runtime& rt_;
  std::vector<std::unique_ptr<TransformerLayer>> layers_;
  std::vector<Segment> plan_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  std::vector<int64_t> saved_per_layer_;
};

// What is held for backward: saved activations + checkpoint inputs.
inline constexpr CategorySet kHeldForBackward{Category::saved_activation, Category::checkpoint_input};
// Bytes currently held for backward on the device (saved activations + checkpoint inputs).
int64_t saved_bytes_now(const MemoryTracker& m);

}  // namespace rcts
