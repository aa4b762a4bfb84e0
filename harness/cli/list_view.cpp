#include "harness/cli/list_view.hpp"

#include <iomanip>
#include <sstream>

#include "harness/cases/case_listing.hpp"
#include "harness/checks/check_kinds.hpp"
#include "harness/cli/view_json.hpp"

namespace rcts::harness {

CaseList list_cases(const std::vector<Case>& cases, const std::string& filter) {
  CaseList l;
  for (const auto& c : cases)
    if (filter.empty() || glob_match(filter, c.id)) l.cases.push_back(&c);
  return l;
}

std::string list_text(const CaseList& l) {
  std::ostringstream os;
  for (const Case* c : l.cases) os << std::left << std::setw(44) << c->id << c->description << "\n";
  return os.str();
}

std::string list_tsv(const CaseList& l) {
  std::string out;
  for (const Case* c : l.cases) out += case_tsv_line(*c) + "\n";
  return out;
}

nlohmann::json list_json(const CaseList& l) {
  using nlohmann::json;
  json out = view_head("rcts-list");
  out["cases"] = json::array();
  for (const Case* c : l.cases) {
    json variants = json::array();
    for (const auto& v : c->variants) variants.push_back(v.name);
    json checks = json::array();
    for (const CheckKind* k : requested_kinds(c->expect)) checks.push_back(std::string(k->name));
    out["cases"].push_back({{"id", c->id},
                            {"description", c->description},
                            {"file", c->file.string()},
                            {"ranks", c->ranks},
                            {"backends", c->backends},
                            {"checks", checks},
                            {"variants", variants},
                            {"xfail", c->xfail ? json(*c->xfail) : json(nullptr)}});
  }
  return out;
}

}  // namespace rcts::harness
