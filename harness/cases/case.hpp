// Case files (design §10, schema in cases/README.md): one JSON file per case. A case
// names a base config, the variants to compare with it, and what to expect. Parsing
// is strict: unknown keys, wrong types and out-of-range values are errors naming
// the file, the JSON path and the value.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/driver/execute.hpp"

namespace rcts::harness {

struct CountExpect {
  std::string pattern;  // module path; '*' matches any run of characters
  int64_t original = 0;  // forward invocations per micro-batch
  int64_t recompute = 0;
};

struct MemoryExpect {
  bool analytic = false;                   // per-layer saved bytes and backward peak == the analytic model
  std::optional<double> max_ratio;         // variant total saved bytes <= ratio * baseline's
  std::optional<int64_t> budget_bytes;     // saved-bytes peak <= budget
};

struct Expect {
  bool bitwise = false;
  bool masks = false;
  bool rng = false;
  bool golden = false;
  bool masks_across_ranks = false;  // multi-rank: which ranks must share or differ in masks
  bool offload = false;             // offload invariants (bytes, threshold, margin, pool, residency)
  std::optional<MemoryExpect> memory;
  std::vector<CountExpect> counts;
  std::optional<std::string> config_error;  // rule code the config must be rejected with
};

struct Variant {
  std::string name;
  nlohmann::json patch;  // partial config merged over the case's config
  Expect expect;         // added to the case-level expectations
};

struct Case {
  std::string id;  // dotted path, e.g. "selective.core_attn.bf16"
  std::filesystem::path file;
  std::string source_sha256;  // of the parsed file, so ranks can tell they run the same case
  std::string description;
  std::vector<int> ranks = {1};
  std::vector<std::string> backends = {"cpu"};
  nlohmann::json config;  // the baseline config (partial, over defaults)
  RankCoords seed_ranks;  // which rank a single-process run seeds as
  std::vector<Variant> variants;
  Expect expect;                 // applies to the baseline and every variant
  std::optional<std::string> xfail;  // reason (an issue) for an expected failure
};

Case load_case(const std::filesystem::path& file);
// The same from parsed JSON (harness/io/strict_json.hpp); `file` names it in errors.
Case case_from_json(const nlohmann::json& j, const std::filesystem::path& file);
// Every *.json under the given files/directories (recursively), sorted by id.
// Duplicate ids are an error naming both files; so is a directory without cases.
std::vector<Case> load_cases(const std::vector<std::filesystem::path>& paths);

// Glob for counters and filters: '*' matches any run of characters.
bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace rcts::harness
