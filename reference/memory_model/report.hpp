// The memory model as a report (the `rcts memory` calculator): one layer's saved
// tensors, the stage under the config's recompute, Korthikanti Table 2 variants,
// the checkpoint-segment optimum and the recompute FLOP overhead.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "reference/config/config.hpp"

namespace rcts {

// Both validate the config first (ConfigError) and cover dense layers only.
nlohmann::json memory_report_json(const Config& c);
std::string memory_report_text(const Config& c);  // fixed-width tables

}  // namespace rcts
