#include "harness/cases/case_config.hpp"

#include <algorithm>

#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Config load_config(const Case& c, const nlohmann::json* patch, const std::string& label) {
  Config cfg = config_from_json(c.config, c.file.string(), "/config");
  if (patch) cfg = apply_overrides(cfg, *patch, c.file.string() + " (variant '" + label + "')", variant_config_path(c, label));
  validate_or_throw(cfg, c.file.string() + " (" + label + ")");
  return cfg;
}

}  // namespace

std::string variant_config_path(const Case& c, const std::string& name) {
  for (size_t i = 0; i < c.variants.size(); ++i)
    if (c.variants[i].name == name) return "/variants/" + std::to_string(i) + "/config";
  return "/config";
}

Config case_config(const Case& c, const Variant* v) {
  return load_config(c, v ? &v->patch : nullptr, v ? v->name : "baseline");
}

std::vector<const Case*> select_cases(const std::vector<Case>& cases, const std::string& filter) {
  std::vector<const Case*> selected;
  for (const auto& c : cases)
    if (filter.empty() || glob_match(filter, c.id)) selected.push_back(&c);
  if (selected.empty())
    throw Error(cases.empty() ? std::string("no cases to run")
                              : "no case matches --filter '" + filter + "' (" + std::to_string(cases.size()) +
                                    " cases loaded; `rcts list` shows their ids)");
  return selected;
}

bool case_runs_on(const Case& c, const Backend& backend) {
  return contains(c.backends, backend.name()) || contains(c.backends, backend.golden_name());
}

}  // namespace rcts::harness
