// Output-discarding checkpointing (Megatron's CheckpointWithoutOutput; design §6).
// For ops whose output the next op saves anyway (norm output,
// activation output): forward runs the region without saving and keeps the output;
// once the consumer saved it, discard_output() releases the output's bytes (the
// tensor object and every view stay); recompute() — fired when the gradient of the
// hook tensor arrives, before the consumer's backward — re-runs the region under
// the forward's RNG snapshot and re-attaches the new bytes zero-copy (adopt), so the
// consumer's saved view sees them. A second recompute() does nothing. backward()
// before the recompute fired is an error.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reference/recompute/region.hpp"
#include "reference/rng/rng.hpp"

namespace rcts {

class OutputDiscardingCheckpoint {
 public:
  // `ctx` is this invocation's context; the checkpoint keeps its inputs there.
  OutputDiscardingCheckpoint(Rng& rng, Region& region, SaveContext& ctx);

  std::vector<Tensor> forward(const std::vector<Tensor>& in);
  // Releases the outputs' storage. Call after the consumer saved the output.
  // `hook_name` names the tensor whose gradient fires the recompute (diagnostics).
  void discard_output_and_register_recompute(const std::string& hook_name);
  void recompute();
  std::vector<Tensor> backward(const std::vector<Tensor>& dout);

  bool discarded() const { return discarded_; }
  bool recomputed() const { return recomputed_; }

 private:
  Rng& rng_;
  Region& region_;
  SaveContext& ctx_;
  SaveContext* recompute_ctx_ = nullptr;
  std::vector<Tensor> outputs_;
  std::string hook_name_;
  bool discarded_ = false;
  bool recomputed_ = false;
};

}  // namespace rcts
