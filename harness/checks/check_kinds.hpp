// The registry of check kinds (design §10): the one list that the runner, `rcts
// explain`, `rcts checks`, the reports and the docs read. A kind has a name (its key
// under "expect", parsed by its entry of the same name in harness/cases/expect_schema.hpp), a
// one-line description, and the passes it runs: on the baseline, on each variant
// (compared with the baseline), and once at the end of the case.
//
// Adding a check kind (the one list of steps):
//  1. its entry in the expect schema (harness/cases/expect_schema.cpp): where it may
//     appear and its JSON parser;
//  2. its entry of the same name in check_kinds.cpp, with its passes and its rule for
//     records that lack its evidence (applicability.cpp), if any; the registry refuses
//     to start when the two lists disagree;
//  3. its check function;
//  4. its lines in docs/checks.md, cases/README.md and docs/dump-format.md, which
//     tests/harness/checks/check_kinds_test.cpp asks for.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/cases/case.hpp"
#include "harness/cases/expect_schema.hpp"
#include "harness/golden/golden.hpp"
#include "harness/results/result.hpp"
#include "reference/backend/backend.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts::harness {

// What the checks of a case are judged with besides its records (the runner sets it).
struct CheckEnv {
  Communicator* world = nullptr;  // multi-rank runs: the world communicator (host bytes)
  // The backend the runs executed on here; null when they were read from dumps.
  const Backend* backend = nullptr;
  std::filesystem::path golden_dir = "golden";
  // regen-golden: the baseline's golden digests are stored here (by case id) instead of
  // being compared with the golden file.
  std::map<std::string, Golden>* collect_goldens = nullptr;
};

// What a check pass sees.
struct CheckContext {
  const Case& c;
  const CheckEnv& env;
  bool multi = false;                 // a multi-rank run (the world communicator is env.world)
  const RunRecord& base;              // the baseline's record
  const GroupLayout& base_layout;     // its process layout (multi-rank runs)
  // Variant passes only:
  const Variant* variant = nullptr;
  const RunRecord* run = nullptr;
  const GroupLayout* layout = nullptr;
  // Runs another config at the variant's ranks (the offload check runs the variant
  // without offload); `label` names it in errors.
  std::function<RunRecord(const Config&, const std::string& label)> rerun;
};

using CheckPass = void (*)(const CheckContext&, std::vector<CheckResult>& out);
// Why a kind cannot judge the runs of a context (a dump lacking what it needs), or nothing.
using Inapplicable = std::optional<std::string> (*)(const CheckContext&);

struct CheckKind {
  std::string_view name;     // key under "expect", and CheckResult::kind of its results
  std::string_view summary;  // one line: what it asserts
  bool runs_without_execution = false;  // config_error: judged on the config alone
  CheckPass on_baseline = nullptr;
  CheckPass on_variant = nullptr;  // runs when the case or the variant asks
  CheckPass on_case_end = nullptr;
  // Further result kinds its passes produce besides `name` (e.g. "tp_replicas").
  std::vector<std::string_view> also_reports = {};
  // When set, each pass first asks it and records a skip with its reason instead of
  // judging (applicability.hpp); kinds whose evidence every record holds leave it null.
  Inapplicable not_applicable = nullptr;
  // Its entry in the expect schema (bound by name when the registry is built).
  const ExpectKind* schema = nullptr;

  // Whether an Expect asks for this kind.
  bool requested(const Expect& e) const { return schema->requested(e); }
  // May not appear in a variant's "expect".
  bool case_level_only() const { return schema->case_level_only; }
};

const std::vector<CheckKind>& check_kinds();
const CheckKind* find_check_kind(std::string_view name);
std::vector<std::string> check_kind_names();

// The kinds an Expect asks for, in registry order.
std::vector<const CheckKind*> requested_kinds(const Expect& e);

}  // namespace rcts::harness
