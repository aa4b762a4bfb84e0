#include "harness/ranks/ranks.hpp"
#include "harness/io/text_safety.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "harness/checks/divergence.hpp"
#include "harness/io/gather.hpp"

namespace rcts::harness {

namespace {
int severity(Outcome o) {
  switch (o) {
    case Outcome::pass: return 0;
    case Outcome::skip: return 1;
    case Outcome::xfail: return 2;
    case Outcome::fail: return 3;
    case Outcome::error: return 4;
  }
  return 4;
}
}  // namespace

CaseResult merge_rank_results(const std::vector<CaseResult>& per_rank) {
  CaseResult m = per_rank.at(0);
  for (size_t r = 1; r < per_rank.size(); ++r) {
    const CaseResult& o = per_rank[r];
    const std::string tag = "rank " + std::to_string(r) + ": ";
    for (const auto& ch : o.checks)
      if (ch.outcome == Outcome::fail || ch.outcome == Outcome::error) {
        CheckResult tagged = ch;  // where it failed and what it could not judge travel with it
        tagged.detail = tag + ch.detail;
        m.checks.push_back(std::move(tagged));
      }
    if (severity(o.outcome) > severity(m.outcome)) {
      m.outcome = o.outcome;
      m.reason = tag + o.reason;
    }
    m.seconds = std::max(m.seconds, o.seconds);
  }
  if (severity(m.outcome) >= 3 && m.reason.rfind("rank ", 0) != 0) m.reason = "rank 0: " + m.reason;
  if (severity(m.outcome) >= 3) m.reason = lead_with_rank_divergences(per_rank, m.reason);
  return m;
}

CaseResult merge_across_ranks(const CaseResult& mine, Communicator& world) {
  nlohmann::json j = mine;
  std::vector<CaseResult> all;
  for (const auto& s : all_gather_strings(world, json_text(j))) all.push_back(case_result_from_json(nlohmann::json::parse(s)));
  return merge_rank_results(all);
}

}  // namespace rcts::harness
