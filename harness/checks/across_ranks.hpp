// Checks across the ranks of a multi-rank run (design §5, §8): dropout masks that must
// be identical or distinct between ranks, and tensor-parallel replicas that must agree
// bit for bit. Each is collective over the world communicator.
#pragma once
#include <string>
#include <vector>

#include "harness/results/result.hpp"
#include "reference/driver/execute.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts::harness {

// design §5 across ranks: hidden dropout without SP identical across TP ranks;
// attention dropout and hidden dropout with SP distinct across TP ranks; expert
// dropout identical within an expert-data-parallel group and distinct across EP and
// ETP ranks. With opaque generator states (an adapter's digests) and no expert draw, the
// expert-parallel-rng stream is judged by its state after each micro-batch: the same
// within an expert-DP group, distinct across EP / ETP ranks. Collective over `world`.
CheckResult check_masks_across_ranks(const RunRecord& run, const GroupLayout& layout, Communicator& world,
                                     const std::string& label);

// The parameters every rank of a TP group holds in full (design §8), decided by name
// from the model: both layernorms' weights and biases (all-reduced over TP under
// SP), the row-parallel biases (attention output projection, dense fc2: summed over
// the full gradient) and the MoE router weight (all-reduced under SP). Everything else
// is a TP shard (QKV and fc1 with their biases, the projection and fc2 weights, the
// shared experts) or a routed expert ("*.moe.experts.*"), which EP/ETP place: two TP
// ranks of the same EP and ETP rank hold the same experts (in full when ETP = 1), and
// compare_tp_replicas compares those too.
bool tp_replicated_parameter(const std::string& name);

// Tensor-parallel replicas agree: every rank of a TP group holds bit-identical
// losses, (gathered) outputs, and values and gradients of every replicated
// parameter. tp_replica_digest is one rank's part, compare_tp_replicas judges every
// rank's (in world rank order); check_tp_replicas is both, collective over `world`.
std::string tp_replica_digest(const RunRecord& run);
CheckResult compare_tp_replicas(const std::vector<std::string>& per_rank, const GroupLayout& layout,
                                const std::string& label);
CheckResult check_tp_replicas(const RunRecord& run, const GroupLayout& layout, Communicator& world,
                              const std::string& label);

// Data-parallel replicas agree: the reference feeds every replica the same data (inputs
// and targets keyed by seed, step and micro-batch only; design §8), so ranks that differ
// only in their dp / expert-dp coordinate hold bit-identical losses, outputs, input
// gradients, side effects, parameters and gradients. The coordinates come from the
// world size and the config's sizes in Megatron-LM's order (tp fastest, then dp, pp
// slowest; experts etp, ep, edp), not from reference/parallel, so a wrong group or
// neighbour there cannot hide. dp_replica_digest is one rank's part.
std::string dp_replica_digest(const RunRecord& run);
CheckResult compare_dp_replicas(const std::vector<std::string>& per_rank, const Config& config,
                                const std::string& label);
CheckResult check_dp_replicas(const RunRecord& run, Communicator& world, const std::string& label);

}  // namespace rcts::harness
