#include "tests/fuzz/fuzz_entry.hpp"

#include "harness/cases/case.hpp"
#include "harness/golden/golden.hpp"
#include "harness/io/strict_json.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"
#include "reference/memory_model/report.hpp"
#include "reference/memory_model/run_estimate.hpp"

namespace rcts::fuzz {
namespace {

const char* const kSource = "fuzz input";

// What the CLI does with a config before running it, short of running it.
void check_config(const Config& cfg, const std::string& where) {
  validate_or_throw(cfg, where);
  check_run_limits(cfg, where);
  if (cfg.model.num_moe_experts == 0) memory_report_text(cfg);  // the model covers dense layers only
}

}  // namespace

void parse_input(std::string_view data) {
  nlohmann::json j;
  try {
    j = harness::parse_json_text(data, kSource);
  } catch (const Error&) {
    return;
  }
  try {  // as a case file
    const harness::Case c = harness::case_from_json(j, kSource);
    const Config base = config_from_json(c.config, kSource);
    check_config(base, "baseline");
    for (const auto& v : c.variants) check_config(apply_overrides(base, v.patch, kSource), v.name);
  } catch (const Error&) {
  }
  try {  // as a config file
    check_config(config_from_json(j, kSource), kSource);
  } catch (const Error&) {
  }
  try {  // as a golden file
    harness::golden_from_json(j, kSource);
  } catch (const Error&) {
  }
}

}  // namespace rcts::fuzz
