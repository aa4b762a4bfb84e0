// What the JSON forms of `rcts list`, `rcts explain` and `rcts block` share
// (docs/json-report.md): each is one object with "schema" and "schema_version".
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/recompute/plan.hpp"

namespace rcts::harness {

inline constexpr int kCommandJsonSchemaVersion = 1;

inline nlohmann::json view_head(const char* schema) {
  return {{"schema", schema}, {"schema_version", kCommandJsonSchemaVersion}};
}

// [{begin, end, checkpointed}] per segment.
inline nlohmann::json plan_json(const std::vector<Segment>& plan) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : plan) out.push_back({{"begin", s.begin}, {"end", s.end}, {"checkpointed", s.checkpointed}});
  return out;
}

}  // namespace rcts::harness
