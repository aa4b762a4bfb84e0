// The runner's points of agreement between ranks (ranks/agreement.hpp): the case list,
// before a case (every rank may run it), after a case (the merged result).
#include "harness/run/case_agreement.hpp"

#include <algorithm>

#include "harness/ranks/ranks.hpp"
#include "reference/config/config_json.hpp"
#include "reference/core/faults.hpp"

namespace rcts::harness {

void agree_on_case_list(const std::vector<const Case*>& selected, const RunOptions& o) {
  if (!o.scope.agreement || o.scope.agreement->size() == 1) return;
  std::vector<std::string> ids;
  for (const Case* c : selected) ids.push_back(c->id);
  if (auto v = case_list_verdict(o.scope.agreement->exchange("case list", {{"cases", ids}}))) throw AgreedError(*v);
}

nlohmann::json case_record(const Case& c, const RunOptions& o) {
  nlohmann::json j{{"case", c.id},
                   {"file", c.file.string()},
                   {"source", c.source_sha256},
                   {"mutant", std::string(fault_name(active_fault()))},
                   {"backend", o.scope.backend ? o.scope.backend->name() : ""},
                   {"golden_only", o.scope.golden_only},
                   {"collect_goldens", o.sinks.collect_goldens != nullptr}};
  const bool runs_here = o.scope.backend && case_runs_on(c, *o.scope.backend) &&
                         std::find(c.ranks.begin(), c.ranks.end(), o.scope.world_size) != c.ranks.end();
  if (!runs_here || c.expect.config_error) return j;  // skipped, or a config that must be rejected
  try {
    nlohmann::json configs;
    configs["baseline"] = config_to_json(case_config(c, nullptr));
    for (const auto& v : c.variants) configs["variant " + v.name] = config_to_json(case_config(c, &v));
    j["configs"] = std::move(configs);
  } catch (const std::exception& e) {
    j["error"] = e.what();
  }
  return j;
}

std::optional<CaseResult> agree_before_case(const Case& c, const RunOptions& o) {
  if (!o.scope.agreement || o.scope.agreement->size() == 1) return std::nullopt;
  const auto v = case_verdict(o.scope.agreement->exchange("before case " + c.id, case_record(c, o)));
  if (!v) return std::nullopt;
  CaseResult r;
  r.id = c.id;
  r.file = c.file.string();
  r.outcome = Outcome::error;
  r.reason = *v;
  return r;
}

CaseResult agree_after_case(const CaseResult& mine, const RunOptions& o) {
  if (!o.scope.agreement || o.scope.agreement->size() == 1) return mine;
  nlohmann::json record{{"result", mine}};
  // An error (or an expected failure, which may hide one) can mean this rank left the
  // case while the others still wait for it in a collective: wait for them only briefly.
  const bool failed = mine.outcome == Outcome::error || mine.outcome == Outcome::xfail;
  if (failed) record["error"] = "case " + mine.id + ": " + mine.reason;
  const auto all = o.scope.agreement->exchange("after case " + mine.id, record,
                                         failed ? RankAgreement::Wait::after_error : RankAgreement::Wait::normal);
  std::vector<CaseResult> per_rank;
  for (const auto& r : all) per_rank.push_back(case_result_from_json(r.at("result")));
  return merge_rank_results(per_rank);
}

}  // namespace rcts::harness
