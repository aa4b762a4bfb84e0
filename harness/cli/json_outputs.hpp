// Machine-readable forms of `rcts list`, `rcts explain` and `rcts block` (`--json`;
// documented in docs/json-report.md). Each is one JSON object with "schema" and
// "schema_version"; everything but the block's "timing" is the same in every run.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cases/case.hpp"
#include "reference/backend/backend.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/run_estimate.hpp"

namespace rcts::harness {

inline constexpr int kCommandJsonSchemaVersion = 1;

// {"schema": "rcts-list", "cases": [{id, description, file, ranks, backends, checks, variants}]}
// for the cases whose id matches `filter` (empty: all).
nlohmann::json list_json(const std::vector<Case>& cases, const std::string& filter);

// {"schema": "rcts-explain", what explain_case() prints, as data}.
nlohmann::json explain_json(const Case& c, Backend& backend, const RunLimits& limits = {});

// {"schema": "rcts-block", config, losses, gradient norms, saved bytes, peaks, "timing"}.
nlohmann::json block_json(const Config& cfg, const RunRecord& r, const Backend& backend, double seconds);

}  // namespace rcts::harness
