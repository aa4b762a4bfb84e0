// CheckpointFunction: normal activation checkpointing (design §6).
// Forward snapshots all RNG states (host, device default, tracker), runs the region
// without saving, and saves only its inputs (through the saved-tensor hooks, as
// checkpoint_input). Backward restores the snapshot inside fork_rng, re-runs the
// region with saving, and differentiates it. With distribute_saved_activations,
// input 0 is kept as this TP rank's flat 1/t shard and all-gathered before recompute.
#pragma once
#include <vector>

#include "reference/parallel/communicator.hpp"
#include "reference/recompute/region.hpp"
#include "reference/rng/rng.hpp"

namespace rcts {

struct CheckpointOptions {
  bool distribute_saved_activations = false;
  Communicator* tp_group = nullptr;  // required when distributing
};

namespace checkpoint {

// Runs `region` as a checkpoint; everything backward needs is kept in `ctx`.
std::vector<Tensor> forward(Rng& rng, Region& region, SaveContext& ctx, const std::vector<Tensor>& in,
                            const CheckpointOptions& options = {});
// Recomputes and differentiates `region`; returns the input gradients. Clears ctx.
std::vector<Tensor> backward(Rng& rng, Region& region, SaveContext& ctx, const std::vector<Tensor>& dout);

// Runs `region` as a checkpoint when `checkpointed`, else plainly (saving into ctx):
// the one switch every recompute site makes.
std::vector<Tensor> run_forward(bool checkpointed, Rng& rng, Region& region, SaveContext& ctx,
                                const std::vector<Tensor>& in, const CheckpointOptions& options = {});
std::vector<Tensor> run_backward(bool checkpointed, Rng& rng, Region& region, SaveContext& ctx,
                                 const std::vector<Tensor>& dout);

// Runs `region` forward under RNG snapshot `snap` inside fork_rng, saving into `rc`
// (shared by both checkpoint kinds; honours the RNG mutants).
std::vector<Tensor> recompute_forward(Rng& rng, Region& region, SaveContext& rc, const RngStates& snap,
                                      const std::vector<Tensor>& in);

}  // namespace checkpoint
}  // namespace rcts
