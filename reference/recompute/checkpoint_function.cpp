#include "reference/recompute/checkpoint_function.hpp"

#include <functional>
#include <map>
#include <optional>

#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts::checkpoint {

namespace {

constexpr StashKey<RngStates> kSnapshot{"checkpoint.rng"};
constexpr StashKey<Shape> kShape0{"checkpoint.input0_shape"};
constexpr StashKey<Communicator*> kTpGroup{"checkpoint.tp_group"};

// Where copies of `t` go: its own tracker, memory and domain.
Placement placement_of(const Tensor& t) {
  const Storage& s = *t.storage();
  return {s.tracker(), s.domain(), Category::activation, &s.memory()};
}

// This rank's flat 1/t shard of `t` (a copy, so the full tensor can be freed).
Tensor shard_of(const Tensor& t, Communicator& tp) {
  const int64_t n = t.numel();
  const int64_t ranks = tp.size();
  RCTS_CHECK(n % ranks == 0, "distribute_saved_activations: checkpoint input '" + t.name() + "' has " +
                                 std::to_string(n) + " elements, not divisible by the TP size " +
                                 std::to_string(ranks));
  const int64_t part = n / ranks;
  return t.view({ranks, part}).rows(tp.rank(), tp.rank() + 1).view({part}).clone(placement_of(t), t.name() + ".shard");
}

Tensor gather_shards(const Tensor& shard, const Shape& shape, Communicator& tp) {
  Tensor full = Tensor::uninitialized(shape, shard.dtype(), placement_of(shard), shard.name() + ".gathered");
  if (fault_on(Fault::distribute_without_gather)) {
    // Mutant: every slot gets this rank's own shard, as if the exchange never ran.
    const Tensor slots = full.view({tp.size(), shard.numel()});
    for (int r = 0; r < tp.size(); ++r) slots.rows(r, r + 1).view(shard.shape()).copy_from(shard);
    return full;
  }
  tp.all_gather(shard.bytes(), full.bytes(), shard.nbytes());
  return full;
}

// Mutant expert_rng_state_on_layer: the expert stream's forward state per checkpointed
// region (as a module attribute would hold it), overwritten by every micro-batch's forward.
std::map<const Region*, GeneratorState>& expert_state_by_site() {
  static std::map<const Region*, GeneratorState> by_site;
  return by_site;
}

}  // namespace

std::vector<Tensor> forward(Rng& rng, Region& region, SaveContext& ctx, const std::vector<Tensor>& in,
                            const CheckpointOptions& options) {
  ctx.stash(kSnapshot, rng.all_states());
  if (fault_on(Fault::expert_rng_state_on_layer))
    if (auto it = ctx.stashed(kSnapshot).tracker.find(kExpertParallelRng); it != ctx.stashed(kSnapshot).tracker.end())
      expert_state_by_site()[&region] = it->second;
  std::vector<Tensor> out;
  {
    CheckpointingScope scope;
    // The mutant keeps the intermediates: gradients stay right, memory does not.
    SaveContext& run =
        fault_on(Fault::checkpoint_keeps_intermediates) ? ctx.child("#kept") : ctx.child_no_grad("#nograd");
    out = region.forward(run, in);
  }
  const auto names = region.input_names();
  RCTS_CHECK(names.size() == in.size(), "checkpoint of '" + ctx.path() + "': region names " +
                                            std::to_string(names.size()) + " inputs but got " +
                                            std::to_string(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == 0 && options.distribute_saved_activations) {
      RCTS_CHECK(options.tp_group, "distribute_saved_activations needs a TP communicator");
      ctx.stash(kShape0, in[0].shape());
      ctx.stash(kTpGroup, options.tp_group);
      ctx.save(shard_of(in[0], *options.tp_group), names[0], Category::checkpoint_input);
    } else {
      ctx.save(in[i], names[i], Category::checkpoint_input);
    }
  }
  return out;
}

std::vector<Tensor> recompute_forward(Rng& rng, Region& region, SaveContext& rc, const RngStates& snap,
                                      const std::vector<Tensor>& in) {
  RecomputingScope recomputing;
  auto restore = [&] {
    if (fault_on(Fault::no_rng_restore)) return;
    if (fault_on(Fault::default_only_restore)) {
      rng.device().set_state(snap.device);
      return;
    }
    rng.set_all_states(snap);
  };
  // Re-enter the tracker forks the forward was inside (sequence parallelism runs the
  // block inside a model-parallel-rng fork), so nested forks resume as they did.
  std::vector<Tensor> out;
  std::function<void(size_t)> run_in_forks = [&](size_t i) {
    if (i == snap.active_forks.size()) {
      out = region.forward(rc, in);
      return;
    }
    auto fork = rng.tracker().fork(snap.active_forks[i]);
    run_in_forks(i + 1);
  };
  if (fault_on(Fault::recompute_on_main_stream)) {
    restore();
    run_in_forks(0);
    return out;
  }
  ForkRng fork(rng);
  restore();
  run_in_forks(0);
  return out;
}

std::vector<Tensor> backward(Rng& rng, Region& region, SaveContext& ctx, const std::vector<Tensor>& dout) {
  const auto names = region.input_names();
  std::vector<Tensor> in;
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor t = ctx.load(names[i]);
    if (i == 0 && ctx.has_stash(kShape0)) t = gather_shards(t, ctx.stashed(kShape0), *ctx.stashed(kTpGroup));
    in.push_back(std::move(t));
  }
  SaveContext& rc = ctx.child_for_recompute("#recompute");
  RngStates snap = ctx.stashed(kSnapshot);
  if (fault_on(Fault::expert_rng_state_on_layer))
    if (auto it = expert_state_by_site().find(&region); it != expert_state_by_site().end())
      snap.tracker[kExpertParallelRng] = it->second;
  recompute_forward(rng, region, rc, snap, in);
  auto grads = region.backward(rc, dout);
  ctx.clear();
  return grads;
}

std::vector<Tensor> run_forward(bool checkpointed, Rng& rng, Region& region, SaveContext& ctx,
                                const std::vector<Tensor>& in, const CheckpointOptions& options) {
  return checkpointed ? forward(rng, region, ctx, in, options) : region.forward(ctx, in);
}

std::vector<Tensor> run_backward(bool checkpointed, Rng& rng, Region& region, SaveContext& ctx,
                                 const std::vector<Tensor>& dout) {
  return checkpointed ? backward(rng, region, ctx, dout) : region.backward(ctx, dout);
}

}  // namespace rcts::checkpoint
