// The result model of an rcts run (design §10), what checks produce and every report
// renders: outcomes pass, fail, skip (with a reason), xfail (expected failure) or error
// (the case could not run, e.g. it threw), the execution point a failure shows first,
// a case's checks, and the run's header.
//
// Counting rule for the summary's last line "N passed, N failed, N skipped": errors count
// as failed (a run with an error must not look clean) and xfail as skipped (an expected
// failure is not a pass). JSON and JUnit keep all five counts apart.
#pragma once
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rcts::harness {

enum class Outcome { pass, fail, skip, xfail, error };

std::string_view outcome_name(Outcome o);   // "pass", "fail", ...
std::string_view outcome_label(Outcome o);  // "PASS", "FAIL", ...
// Throws rcts::Error naming the bad value.
Outcome parse_outcome(std::string_view name);

// Where in a run's execution a failure shows first: (step, micro-batch, phase), the
// phases in the order they run within a micro-batch (forward dropout draws, forward
// activations and loss, recompute draws in backward, input gradients, RNG states after
// it; parameters and their gradients after the last micro-batch). Orders a case's
// failing checks so the cause comes before its symptoms (divergence.hpp).
enum class Phase { seeding, forward_draw, forward, recompute_draw, backward, rng_after, step_end };
std::string_view phase_name(Phase p);  // "forward dropout draw", ...
struct ExecPoint {
  int step = 0, micro_batch = 0;
  Phase phase = Phase::seeding;
  auto operator<=>(const ExecPoint&) const = default;
  std::string str() const;  // "step 0 micro-batch 1, recompute dropout draw"
};

struct CheckResult {
  std::string kind;  // bitwise, masks, rng, memory, counts, golden, config_error
  Outcome outcome = Outcome::pass;
  std::string detail;
  // What depends on wall-clock time (an exposed wait); reported apart from `detail`
  // (JSON "timing"), so the results of two identical runs are identical.
  std::string timing = {};
  // A failure's first execution point, when the runner could place it (divergence.hpp).
  std::optional<ExecPoint> at = {};
  // Parts of what the check covers that it could not judge, each with the reason (e.g.
  // side effects a dump declares not recorded); JSON "not_judged". A check that judged
  // nothing at all is a skip instead.
  std::vector<std::string> not_judged = {};
};

struct CaseResult {
  std::string id;    // dotted path, e.g. "selective.core_attn.bf16"
  std::string file;  // the case file it came from
  Outcome outcome = Outcome::pass;
  std::string reason;  // why it failed, was skipped or is expected to fail
  double seconds = 0;
  std::vector<CheckResult> checks;
  std::string backend;  // the backend it ran on (empty: not recorded)
};

struct RunHeader {
  std::string version, git_sha, backend;
  int ranks = 1;
  uint64_t seed = 0;
  std::string started_at;  // ISO 8601
};

struct Tally {
  int passed = 0, failed = 0, skipped = 0, xfail = 0, errors = 0;
};
Tally tally(const std::vector<CaseResult>& cases);

// "N passed, N failed, N skipped" under the counting rule above.
std::string summary_line(const std::vector<CaseResult>& cases);

void to_json(nlohmann::json& j, const CheckResult& c);
void to_json(nlohmann::json& j, const CaseResult& c);
void to_json(nlohmann::json& j, const RunHeader& h);

// Reads back what to_json(CaseResult) wrote.
CaseResult case_result_from_json(const nlohmann::json& j);

}  // namespace rcts::harness
