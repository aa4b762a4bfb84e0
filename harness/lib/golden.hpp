// Golden files (DESIGN §10): golden/<backend>/<case-id>.json holds, for the case's
// baseline run, the loss of every micro-batch (as the hex bits of a double) and
// per tensor (outputs, input gradients, parameters, parameter gradients) its shape,
// dtype, sha256 of the raw little-endian bytes and summary stats for diagnosis.
// Only `rcts regen-golden` (scripts/regen-golden) writes them.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/lib/case.hpp"
#include "harness/lib/digest.hpp"
#include "harness/lib/report.hpp"

namespace rcts::harness {

struct Golden {
  std::string case_id;
  std::string backend;
  std::vector<std::string> losses;  // hex bits
  std::vector<TensorDigest> tensors;
};

Golden golden_of(const Case& c, const RunRecord& baseline, const std::string& backend);
nlohmann::json golden_to_json(const Golden& g);
Golden golden_from_json(const nlohmann::json& j, const std::string& where);
std::filesystem::path golden_path(const std::filesystem::path& golden_dir, const std::string& backend,
                                  const std::string& case_id);

// Compares the run with the stored golden; a missing file fails with a hint.
CheckResult check_golden(const Case& c, const RunRecord& baseline, const std::filesystem::path& golden_dir,
                         const std::string& backend);

// What changed between an old and a new golden, one line per tensor that changed,
// appeared or disappeared (empty when identical).
std::vector<std::string> golden_changes(const Golden& before, const Golden& after);

}  // namespace rcts::harness
