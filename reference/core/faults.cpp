#include "reference/core/faults.hpp"

#include <atomic>

#include "reference/core/error.hpp"

namespace rcts {

namespace {
std::atomic<Fault> active{Fault::none};
}

const std::vector<FaultInfo>& all_faults() {
  static const std::vector<FaultInfo> list = {
      {Fault::no_rng_restore, "no_rng_restore", "recompute runs without restoring the RNG snapshot"},
      {Fault::default_only_restore, "default_only_restore",
       "recompute restores the device default generator only, not the tracker states"},
      {Fault::recompute_on_main_stream, "recompute_on_main_stream",
       "recompute draws from the live RNG streams and leaves them advanced (no fork_rng)"},
      {Fault::tp_seed_without_rank, "tp_seed_without_rank", "model-parallel-rng seed omits tp_rank"},
      {Fault::ep_seed_without_rank, "ep_seed_without_rank", "expert-parallel-rng seed omits ep_rank and etp_rank"},
      {Fault::checkpoint_keeps_intermediates, "checkpoint_keeps_intermediates",
       "checkpointed forward saves its intermediates (no memory saved)"},
      {Fault::uniform_drops_tail, "uniform_drops_tail",
       "uniform recompute leaves the truncated tail chunk un-checkpointed"},
      {Fault::uniform_feeds_chunk_input, "uniform_feeds_chunk_input",
       "every layer of a uniform chunk is fed the chunk input (Megatron-LM PR #290)"},
      {Fault::late_output_recompute, "late_output_recompute",
       "output-discarding recompute fires after its consumer's backward"},
      {Fault::side_effect_twice, "side_effect_twice", "a side effect inside a recomputed region is applied twice"},
      {Fault::reduction_arrival_order, "reduction_arrival_order",
       "collective sums add the ranks from the caller's own rank on (arrival order), not in rank order", 3},
      {Fault::sp_dropout_outside_fork, "sp_dropout_outside_fork",
       "under sequence parallelism hidden dropout draws outside the model-parallel-rng fork", 2},
      {Fault::distribute_without_gather, "distribute_without_gather",
       "distribute_saved_activations recomputes from a shard that was never all-gathered", 2},
      {Fault::reload_without_wait, "reload_without_wait",
       "offload: backward reads a group without waiting for its reload event (Megatron-LM #7398)"},
      {Fault::free_before_d2h, "free_before_d2h", "offload: device bytes released before their D2H copy completed"},
      {Fault::offload_no_margin, "offload_no_margin",
       "offload: the first-in-backward group of each name is offloaded too (no margin)"},
      {Fault::offload_threshold_bytes, "offload_threshold_bytes",
       "offload: min_offloaded_tensor_size compared with bytes instead of elements"},
      {Fault::offload_wrong_group, "offload_wrong_group",
       "offload: the prefetch picks a group by layer index instead of group position (TransformerEngine #1959)"},
      {Fault::offload_dedup_by_storage, "offload_dedup_by_storage",
       "offload: saved views deduplicated by storage alone, merging distinct views (ms-swift #10157)"},
      {Fault::moe_act_commit_before_fc2, "moe_act_commit_before_fc2",
       "offload: the moe_act group is committed before fc2, so its reload comes after moe_act's recompute"},
      {Fault::fork_no_write_back, "fork_no_write_back",
       "a tracker fork leaves without storing the advanced state back: every fork of a stream redraws its blocks"},
      {Fault::rng_replayed_per_micro_batch, "rng_replayed_per_micro_batch",
       "every micro-batch runs inside a fork_rng scope: each one redraws the previous micro-batch's masks"},
      {Fault::sp_grad_not_reduced, "sp_grad_not_reduced",
       "under sequence parallelism the layernorm biases are not all-reduced over TP (a parameter missing its "
       "sequence_parallel flag): each rank keeps the partial gradient of its own shard", 2},
      {Fault::fp8_amax_advanced_in_recompute, "fp8_amax_advanced_in_recompute",
       "FP8 delayed scaling: a recompute quantises with the scale its forward advanced and records its amax again "
       "(no stash of the FP8 meta tensors)"},
      {Fault::pp_neighbour_tp_mirrored, "pp_neighbour_tp_mirrored",
       "a pipeline stage exchanges with the neighbouring stage's mirrored TP rank: invisible while a stage's TP "
       "ranks hold replicas, wrong under sequence parallelism, where each sends its own shard (design §16)", 4},
      {Fault::expert_rng_state_on_layer, "expert_rng_state_on_layer",
       "a recompute restores the expert-parallel-rng state its checkpoint site stashed last (kept on the layer, not "
       "per micro-batch): under 1F1B, where a stage holds several micro-batches, it replays a later micro-batch's "
       "expert dropout (design §16)", 2},
      {Fault::fp8_replays_latest_forward, "fp8_replays_latest_forward",
       "FP8 delayed scaling: a recompute quantises with the scale of the site's latest forward, not its own "
       "micro-batch's: the same at pp = 1, a later micro-batch's under 1F1B (design §16)", 2},
      {Fault::sgd_lr_doubled, "sgd_lr_doubled",
       "SGD between steps uses twice the learning rate: every run of a case agrees with the others, so only the golden "
       "files and the f64 oracle see it (regen-golden must refuse to bless it)"},
      {Fault::mla_qkv_group_q_only, "mla_qkv_group_q_only",
       "offload: MLA's qkv_linear group closes after the q path, so the kv down-projection, kv_layernorm and kv "
       "up-projection saves stay on device: the group still moves all it marked, only the offloaded share of the "
       "memory model sees the bytes left behind (design §14)"},
      {Fault::gdn_offloads_attn_norm, "gdn_offloads_attn_norm",
       "offload: GDN layers open the attn_norm group; Megatron-LM's GDN spec fuses the input norm into in_proj "
       "(IdentityOp), which turns attn_norm off for them (design §15)"},
  };
  return list;
}

Fault parse_fault(std::string_view name) {
  std::string known;
  for (const auto& f : all_faults()) {
    if (f.name == name) return f.fault;
    known += (known.empty() ? "" : ", ") + std::string(f.name);
  }
  throw Error("unknown mutant '" + std::string(name) + "' (known: " + known + ")");
}

std::string_view fault_name(Fault f) {
  for (const auto& i : all_faults())
    if (i.fault == f) return i.name;
  return "none";
}

Fault active_fault() { return active.load(std::memory_order_relaxed); }

FaultScope::FaultScope(Fault f) : previous_(active.exchange(f)) {}
FaultScope::~FaultScope() { active.store(previous_); }

}  // namespace rcts
