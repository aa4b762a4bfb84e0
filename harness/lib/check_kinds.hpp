// The registry of check kinds (design §10): the one list that case parsing, the runner,
// `rcts explain`, `rcts checks`, the reports and the docs all read. A kind has a name
// (its key under "expect"), a one-line description, where it may appear (case level
// only, or also per variant), its JSON parser, and the passes it runs: on the baseline,
// on each variant (compared with the baseline), and once at the end of the case.
// Adding a check kind means one entry in check_kinds.cpp; the docs test
// (tests/harness/check_kinds_test.cpp) then asks for its line in README.md and
// cases/README.md.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/lib/case.hpp"
#include "harness/lib/json_reader.hpp"
#include "harness/lib/report.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts::harness {

struct RunOptions;

// What a check pass sees.
struct CheckContext {
  const Case& c;
  const RunOptions& options;
  bool multi = false;                 // a multi-rank run (the world communicator is options.world)
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

struct CheckKind {
  std::string_view name;     // key under "expect", and CheckResult::kind of its results
  std::string_view summary;  // one line: what it asserts
  bool case_level_only = false;  // may not appear in a variant's "expect"
  bool runs_without_execution = false;  // config_error: judged on the config alone
  // Parses the value of expect/<name> into `into` (errors name file, path, value).
  void (*parse)(const JsonReader& value, Expect& into);
  // Whether an Expect asks for this kind.
  bool (*requested)(const Expect& e);
  CheckPass on_baseline = nullptr;
  CheckPass on_variant = nullptr;  // runs when the case or the variant asks
  CheckPass on_case_end = nullptr;
  // Further result kinds its passes produce besides `name` (e.g. "tp_replicas").
  std::vector<std::string_view> also_reports = {};
};

const std::vector<CheckKind>& check_kinds();
const CheckKind* find_check_kind(std::string_view name);
std::vector<std::string> check_kind_names();

// Every expect key of `r` through its kind's parser; `variant` rejects case-level kinds.
Expect parse_expectations(const JsonReader& r, bool variant);

// The kinds an Expect asks for, in registry order.
std::vector<const CheckKind*> requested_kinds(const Expect& e);

}  // namespace rcts::harness
