// Multi-rank plumbing for the runner: every rank runs the same case; results,
// mask digests and golden sections are exchanged with the world communicator, so
// rank 0 can print one verdict and every rank exits with the same status.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/lib/case.hpp"
#include "harness/lib/report.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts::harness {

// Every rank's string, in rank order, on every rank.
std::vector<std::string> all_gather_strings(Communicator& world, const std::string& mine);

// One verdict from every rank's result: the worst outcome wins; checks and reasons
// of other ranks are prefixed with "rank r: ".
CaseResult merge_rank_results(const std::vector<CaseResult>& per_rank);
CaseResult merge_across_ranks(const CaseResult& mine, Communicator& world);
// Reads back what to_json(CaseResult) wrote.
CaseResult case_result_from_json(const nlohmann::json& j);

// design §5 across ranks: hidden dropout without SP identical across TP ranks;
// attention dropout and hidden dropout with SP distinct across TP ranks; expert
// dropout identical within an expert-data-parallel group and distinct across EP and
// ETP ranks. Collective over `world`.
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

}  // namespace rcts::harness
