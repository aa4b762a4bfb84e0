// Golden files (design §10): golden/<backend>/<case-id>.json holds, for the case's
// baseline run, the loss of every micro-batch and every side effect (aux loss,
// tokens_seen; golden_side_effects.hpp), each as the hex bits of a double, and
// per tensor (outputs, input gradients, parameters, parameter gradients) its shape,
// dtype, sha256 of the raw little-endian bytes and summary stats for diagnosis.
// Only `rcts regen-golden` (scripts/regen-golden) writes them.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/cases/case.hpp"
#include "harness/io/digest.hpp"
#include "harness/golden/golden_side_effects.hpp"
#include "harness/results/result.hpp"
#include "reference/parallel/communicator.hpp"

namespace rcts::harness {

struct Golden {
  std::string case_id;
  std::string backend;
  std::vector<std::string> losses;  // hex bits
  std::optional<SideEffectBits> side_effects;  // none in a file written before they were recorded
  std::vector<TensorDigest> tensors;
};

// In a multi-rank run (`world` with more than one rank) every rank's digests are
// gathered (collective) and the tensors are named "rank<r>/<name>".
Golden golden_of(const Case& c, const RunRecord& baseline, const std::string& backend, Communicator* world = nullptr);
nlohmann::json golden_to_json(const Golden& g);
Golden golden_from_json(const nlohmann::json& j, const std::string& where);
// golden/<backend>/<id>.json for one rank, <id>.np<W>.json for W ranks.
std::filesystem::path golden_path(const std::filesystem::path& golden_dir, const std::string& backend,
                                  const std::string& case_id, int world_size = 1);

// Compares the run with the stored golden; a missing file fails with a hint.
CheckResult check_golden(const Case& c, const RunRecord& baseline, const std::filesystem::path& golden_dir,
                         const std::string& backend, Communicator* world = nullptr);

// What changed between an old and a new golden, one line per loss, side effect or
// tensor that changed, appeared or disappeared (empty when identical).
std::vector<std::string> golden_changes(const Golden& before, const Golden& after);

}  // namespace rcts::harness
