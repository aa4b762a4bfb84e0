// The runner's points of agreement between the ranks of a multi-rank run (the
// exchanges themselves are ranks/agreement.hpp). No-ops with one rank; each throws
// AgreedError on every rank when the ranks differ or one failed.
#pragma once
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cases/case.hpp"
#include "harness/ranks/agreement.hpp"
#include "harness/run/runner.hpp"

namespace rcts::harness {

void agree_on_case_list(const std::vector<const Case*>& selected, const RunOptions& o);
// Before a case: nullopt when every rank may run it, else the error result every rank
// reports instead of running it.
std::optional<CaseResult> agree_before_case(const Case& c, const RunOptions& o);
// After a case: the merged result of every rank (ranks.hpp merge_rank_results).
CaseResult agree_after_case(const CaseResult& mine, const RunOptions& o);
// The record agree_before_case() exchanges for this rank: case id, file, source
// digest, active mutant, run mode and every resolved config (or the error).
nlohmann::json case_record(const Case& c, const RunOptions& o);

}  // namespace rcts::harness
