// --update-expectations: the expectation file a run's outcomes suggest, for a person to
// review; never written over the original. An entry is changed or removed only when it
// covers nothing but what this run judged (one case at this world size, or every case
// it matches passing here); otherwise the difference is listed for a hand edit. Every
// reason rcts cannot know is the placeholder kReasonPlaceholder, which the parser
// refuses, so an unreviewed file cannot be used.
#pragma once
#include <string>
#include <vector>

#include "harness/expectations/expectation_compare.hpp"

namespace rcts::harness {

struct ExpectationUpdate {
  ExpectationFile proposed;
  std::vector<std::string> added, removed, changed, by_hand;  // one line each, saying why
  bool changes() const { return !added.empty() || !removed.empty() || !changed.empty(); }
};

ExpectationUpdate propose_update(const ExpectationComparison& cmp, const std::vector<CaseInfo>& cases,
                                 const std::vector<CaseResult>& results);

// A unified diff (3 lines of context) from text `a` to text `b`; empty when equal.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_name,
                         const std::string& b_name);

}  // namespace rcts::harness
