// Multi-rank results: every rank runs the same case and rank 0 prints one verdict
// merged from every rank's result, so every rank exits with the same status.
#pragma once
#include <vector>

#include "harness/results/result.hpp"
#include "reference/parallel/communicator.hpp"

namespace rcts::harness {

// One verdict from every rank's result: the worst outcome wins; checks and reasons
// of other ranks are prefixed with "rank r: ".
CaseResult merge_rank_results(const std::vector<CaseResult>& per_rank);
CaseResult merge_across_ranks(const CaseResult& mine, Communicator& world);

}  // namespace rcts::harness
