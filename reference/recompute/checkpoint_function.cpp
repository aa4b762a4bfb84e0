#include "reference/recompute/checkpoint_function.hpp"

#include <cstring>
#include <functional>
#include <optional>

#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts::checkpoint {

namespace {

constexpr const char* kSnapshot = "checkpoint.rng";
constexpr const char* kShape0 = "checkpoint.input0_shape";
constexpr const char* kHandles = "checkpoint.handles";

// This rank's flat 1/t shard of `t` (a copy, so the full tensor can be freed).
Tensor shard_of(const Tensor& t, Communicator& tp) {
  const int64_t n = t.numel();
  const int64_t ranks = tp.size();
  RCTS_CHECK(n % ranks == 0, "distribute_saved_activations: checkpoint input '" + t.name() + "' has " +
                                 std::to_string(n) + " elements, not divisible by the TP size " +
                                 std::to_string(ranks));
  const int64_t part = n / ranks;
  Placement where{t.storage()->tracker(), t.storage()->domain(), Category::activation};
  Tensor s = Tensor::empty({part}, t.dtype(), where, t.name() + ".shard");
  const auto esz = static_cast<int64_t>(dtype_size(t.dtype()));
  std::memcpy(s.bytes(), t.bytes() + tp.rank() * part * esz,
              static_cast<size_t>(part * esz));
  return s;
}

Tensor gather_shards(const Tensor& shard, const Shape& shape, Communicator& tp) {
  Placement where{shard.storage()->tracker(), shard.storage()->domain(), Category::activation};
  Tensor full = Tensor::empty(shape, shard.dtype(), where, shard.name() + ".gathered");
  if (fault_on(Fault::distribute_without_gather)) {
    // Mutant: every slot gets this rank's own shard, as if the exchange never ran.
    for (int r = 0; r < tp.size(); ++r)
      std::memcpy(full.bytes() + r * shard.nbytes(), shard.bytes(), static_cast<size_t>(shard.nbytes()));
    return full;
  }
  tp.all_gather(shard.bytes(), full.bytes(), shard.nbytes());
  return full;
}

}  // namespace

std::vector<Tensor> forward(Rng& rng, Region& region, SaveContext& ctx, const std::vector<Tensor>& in,
                            const CheckpointOptions& options) {
  ctx.stash(kSnapshot, rng.all_states());
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
  std::vector<SavedHandle> handles;
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == 0 && options.distribute_saved_activations) {
      RCTS_CHECK(options.tp_group, "distribute_saved_activations needs a TP communicator");
      ctx.stash(kShape0, in[0].shape());
      handles.push_back(ctx.save(shard_of(in[0], *options.tp_group), names[0], Category::checkpoint_input));
      ctx.stash("checkpoint.tp_group", options.tp_group);
    } else {
      handles.push_back(ctx.save(in[i], names[i], Category::checkpoint_input));
    }
  }
  ctx.stash(kHandles, handles);
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
  auto handles = ctx.stashed<std::vector<SavedHandle>>(kHandles);
  std::vector<Tensor> in;
  for (size_t i = 0; i < handles.size(); ++i) {
    Tensor t = ctx.load(handles[i]);
    if (i == 0 && ctx.has_stash(kShape0))
      t = gather_shards(t, ctx.stashed<Shape>(kShape0), *ctx.stashed<Communicator*>("checkpoint.tp_group"));
    in.push_back(std::move(t));
  }
  SaveContext& rc = ctx.child_for_recompute("#recompute");
  recompute_forward(rng, region, rc, ctx.stashed<RngStates>(kSnapshot), in);
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
