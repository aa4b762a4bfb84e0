// What `rcts list` shows: the cases whose id matches the filter, in load order, as one
// value rendered as text (id and description), as tab-separated lines for scripts
// (harness/cases/case_listing.hpp) or as JSON (`--json`, docs/json-report.md).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cases/case.hpp"

namespace rcts::harness {

struct CaseList {
  std::vector<const Case*> cases;
};

// The cases whose id matches `filter` (empty: all); none matching is an empty list.
CaseList list_cases(const std::vector<Case>& cases, const std::string& filter);

std::string list_text(const CaseList& l);
std::string list_tsv(const CaseList& l);
// {"schema": "rcts-list", "cases": [{id, description, file, ranks, backends, checks, variants, xfail}]}.
nlohmann::json list_json(const CaseList& l);

}  // namespace rcts::harness
