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

// DESIGN §5 across ranks: hidden dropout without SP identical across TP ranks;
// attention dropout and hidden dropout with SP distinct across TP ranks; expert
// dropout identical within an expert-data-parallel group and distinct across EP and
// ETP ranks. Collective over `world`.
CheckResult check_masks_across_ranks(const RunRecord& run, const GroupLayout& layout, Communicator& world,
                                     const std::string& label);

// Tensor-parallel replicas agree: every rank of a TP group holds bit-identical
// losses and (gathered) outputs; collective over `world`.
CheckResult check_tp_replicas(const RunRecord& run, const GroupLayout& layout, Communicator& world,
                              const std::string& label);

}  // namespace rcts::harness
