// A case's configs as rcts resolves them, which cases run on a backend, and which
// cases a filter selects.
#pragma once
#include <string>
#include <vector>

#include "harness/cases/case.hpp"
#include "reference/backend/backend.hpp"
#include "reference/config/config.hpp"

namespace rcts::harness {

// A case's resolved config: the baseline (variant == nullptr) or a variant patched
// over it, validated. Throws rcts::Error naming the file and the variant.
Config case_config(const Case& c, const Variant* variant);
// The JSON pointer of variant `name`'s config in its case file ("/variants/2/config";
// "/config" for a name the case has not): config errors name the value's full path.
std::string variant_config_path(const Case& c, const std::string& name);

// Whether `c` runs on `backend` (its name or golden name is listed in c.backends).
bool case_runs_on(const Case& c, const Backend& backend);
// The cases whose id matches `filter` (empty: all). None is an rcts::Error saying so:
// a run that selects nothing checks nothing.
std::vector<const Case*> select_cases(const std::vector<Case>& cases, const std::string& filter);

}  // namespace rcts::harness
