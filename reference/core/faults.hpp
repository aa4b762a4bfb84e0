// Mutants (design §10): named, compiled-in faults that a run can switch on, one per
// known bug class. The suite must detect every one of them (`rcts mutants`).
// Faults are process-wide and meant to be set for one whole run (FaultScope).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace rcts {

enum class Fault {
  none,
  no_rng_restore,            // recompute does not restore the RNG snapshot
  default_only_restore,      // recompute restores the device default only, not tracker states
  recompute_on_main_stream,  // recompute consumes the live RNG streams (no fork_rng)
  tp_seed_without_rank,      // model-parallel-rng seed ignores tp_rank
  ep_seed_without_rank,      // expert-parallel-rng seed ignores ep/etp rank
  checkpoint_keeps_intermediates,  // checkpointed forward saves everything (no memory saved)
  uniform_drops_tail,        // uniform plan leaves the truncated tail chunk un-checkpointed
  uniform_feeds_chunk_input, // every layer of a uniform chunk gets the chunk input (Megatron PR #290)
  late_output_recompute,     // output-discarding recompute fires after its consumer's backward
  side_effect_twice,         // a recomputed side effect (aux loss) is applied again
  reduction_arrival_order,   // a collective sum adds the ranks in arrival order (own rank first)
  sp_dropout_outside_fork,   // under sequence parallelism the block forward is not inside the model-parallel-rng fork
  distribute_without_gather, // distributed checkpoint input recomputed from the local shard without the all-gather
  reload_without_wait,       // offload: backward uses a group without waiting for its reload (Megatron #7398)
  free_before_d2h,           // offload: device bytes released before the D2H copy completed
  offload_no_margin,         // offload: the first-in-backward group of each name is offloaded too
  offload_threshold_bytes,   // offload: min_offloaded_tensor_size compared with bytes, not elements
  offload_wrong_group,       // offload: prefetch picks the group by layer index, not group position (TE #1959)
  offload_dedup_by_storage,  // offload: saved views deduplicated by storage alone (ms-swift #10157)
  moe_act_commit_before_fc2, // offload: the moe_act group is committed before fc2 (not after)
  fork_no_write_back,        // a tracker fork leaves without storing its advanced state back
  rng_replayed_per_micro_batch,  // all RNG states restored after every micro-batch (fork_rng around the step)
  sp_grad_not_reduced,       // under SP a replicated parameter (the layernorm biases) is not all-reduced over TP
  fp8_amax_advanced_in_recompute,  // FP8 delayed scaling: a recompute records its amax and uses the advanced scale
  pp_neighbour_tp_mirrored,  // a pipeline neighbour is the next stage's mirrored TP rank (tp' = tp_size - 1 - tp)
  expert_rng_state_on_layer, // a recompute takes the expert stream's state its checkpoint site last stashed, not its micro-batch's
  fp8_replays_latest_forward, // FP8: a recompute replays the latest forward's scale, not its own micro-batch's
  sgd_lr_doubled,            // SGD steps with twice the learning rate: math only goldens and the f64 oracle see
  mla_qkv_group_q_only,      // offload: MLA's qkv_linear group closes after the q path (the kv path's saves stay)
  gdn_offloads_attn_norm,    // offload: GDN layers open attn_norm, which Megatron-LM's fused input norm turns off
};

struct FaultInfo {
  Fault fault;
  std::string_view name;
  std::string_view description;
  int min_ranks = 1;  // a mutant only a multi-rank run can show
};

const std::vector<FaultInfo>& all_faults();
// Throws rcts::Error listing the known names when `name` is unknown.
Fault parse_fault(std::string_view name);
std::string_view fault_name(Fault f);

Fault active_fault();
inline bool fault_on(Fault f) { return active_fault() == f; }

class FaultScope {
 public:
  explicit FaultScope(Fault f);
  ~FaultScope();
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;

 private:
  Fault previous_;
};

}  // namespace rcts
