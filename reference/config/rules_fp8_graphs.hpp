// The FP8 and CUDA-graph validation rules (design §12), kept beside the main rule table
// (validate.cpp appends them, field-level ones included, in this order). Each rule has a
// stable code and a case under cases/invalid/.
#pragma once
#include <string>
#include <vector>

#include "reference/config/config.hpp"
#include "reference/config/config_error.hpp"

namespace rcts {

// Issues of the FP8 / CUDA-graph rules, in rule order; only the single-field ones when
// `field_level_only`.
std::vector<ConfigIssue> fp8_graph_issues(const Config& c, bool field_level_only);
std::vector<std::string> fp8_graph_rule_codes();

// Legal values.
const std::vector<std::string>& cuda_graph_scope_names();  // attn, mlp, moe, moe_router, moe_preprocess

}  // namespace rcts
