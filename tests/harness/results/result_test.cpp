// The result model (results/result.hpp): outcome names both ways, the summary's counting
// rule, the order of execution points that puts a cause before its symptoms, and the JSON
// every report and every rank exchange is built from.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/results/result.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

constexpr Outcome kAll[] = {Outcome::pass, Outcome::fail, Outcome::skip, Outcome::xfail, Outcome::error};

TEST(Outcomes, EachNameAndLabelIsItsOwnAndReadsBack) {
  const std::vector<std::pair<std::string, std::string>> want = {
      {"pass", "PASS"}, {"fail", "FAIL"}, {"skip", "SKIP"}, {"xfail", "XFAIL"}, {"error", "ERROR"}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(outcome_name(kAll[i]), want[i].first);
    EXPECT_EQ(outcome_label(kAll[i]), want[i].second);
    EXPECT_EQ(parse_outcome(want[i].first), kAll[i]) << want[i].first;
  }
}

TEST(Outcomes, AnUnknownNameIsRefusedNamingItAndTheNamesThereAre) {
  for (const std::string bad : {"PASS", "passed", "", "xfail "}) {
    try {
      parse_outcome(bad);
      ADD_FAILURE() << "'" << bad << "' was read as an outcome";
    } catch (const Error& e) {
      EXPECT_EQ(e.message(), "unknown outcome '" + bad + "' (expected pass, fail, skip, xfail or error)");
    }
  }
}

CaseResult with(Outcome o) {
  CaseResult r;
  r.outcome = o;
  return r;
}

TEST(Summary, ErrorsCountAsFailedAndExpectedFailuresAsSkipped) {
  const std::vector<CaseResult> cases = {with(Outcome::pass),  with(Outcome::fail),  with(Outcome::error),
                                         with(Outcome::error), with(Outcome::skip),  with(Outcome::xfail),
                                         with(Outcome::xfail), with(Outcome::xfail), with(Outcome::pass)};
  EXPECT_EQ(summary_line(cases), "2 passed, 3 failed, 4 skipped");
  const Tally t = tally(cases);  // JSON and JUnit keep the five apart
  EXPECT_EQ((std::vector<int>{t.passed, t.failed, t.skipped, t.xfail, t.errors}), (std::vector<int>{2, 1, 1, 3, 2}));
  EXPECT_EQ(summary_line({}), "0 passed, 0 failed, 0 skipped");
  EXPECT_EQ(summary_line({with(Outcome::error)}), "0 passed, 1 failed, 0 skipped");  // a run that errored is not clean
}

TEST(ExecPoints, OrderByStepThenMicroBatchThenThePhasesAsTheyRun) {
  const std::vector<Phase> in_order = {Phase::seeding,        Phase::forward_draw, Phase::forward, Phase::recompute_draw,
                                       Phase::backward,       Phase::rng_after,    Phase::step_end};
  for (size_t i = 1; i < in_order.size(); ++i)
    EXPECT_LT((ExecPoint{0, 0, in_order[i - 1]}), (ExecPoint{0, 0, in_order[i]})) << phase_name(in_order[i]);
  EXPECT_LT((ExecPoint{0, 1, Phase::seeding}), (ExecPoint{1, 0, Phase::seeding}));      // step first
  EXPECT_LT((ExecPoint{0, 0, Phase::step_end}), (ExecPoint{0, 1, Phase::forward_draw}));  // then micro-batch
  EXPECT_EQ((ExecPoint{2, 1, Phase::backward}), (ExecPoint{2, 1, Phase::backward}));
}

TEST(ExecPoints, SaySeedingAloneAndEveryOtherPointWithItsStepAndMicroBatch) {
  EXPECT_EQ((ExecPoint{3, 2, Phase::seeding}).str(), "RNG seeding");
  EXPECT_EQ((ExecPoint{0, 1, Phase::recompute_draw}).str(), "step 0 micro-batch 1, recompute dropout draw");
  EXPECT_EQ((ExecPoint{2, 0, Phase::rng_after}).str(), "step 2 micro-batch 0, RNG states after the micro-batch");
  const std::vector<std::string> names = {"RNG seeding", "forward dropout draw", "forward", "recompute dropout draw",
                                          "backward", "RNG states after the micro-batch", "end of step"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(phase_name(static_cast<Phase>(i)), names[i]);
}

TEST(ResultJson, ACheckWritesWhereItFailedAndWhatItLeftUnjudgedOnlyWhenThereAreAny) {
  CheckResult c{"bitwise", Outcome::fail, "output differs", "waited 3 ms"};
  EXPECT_EQ(json(c), (json{{"kind", "bitwise"}, {"outcome", "fail"}, {"detail", "output differs"}}));
  c.at = ExecPoint{1, 0, Phase::backward};
  c.not_judged = {"side_effects: not recorded"};
  EXPECT_EQ(json(c), (json{{"kind", "bitwise"},
                           {"outcome", "fail"},
                           {"detail", "output differs"},
                           {"at", {{"step", 1}, {"micro_batch", 0}, {"phase", "backward"}}},
                           {"not_judged", {"side_effects: not recorded"}}}));
  // Timing is never part of a result: two identical runs give identical results.
  EXPECT_FALSE(json(c).contains("timing"));
}

TEST(ResultJson, ACaseAndARunHeaderWriteEveryField) {
  const CaseResult r{.id = "selective.core_attn.bf16",
                     .file = "cases/selective/core_attn.bf16.json",
                     .outcome = Outcome::skip,
                     .reason = "needs 2 ranks",
                     .seconds = 0.25,
                     .checks = {{"rng", Outcome::pass, "equal"}},
                     .backend = "cpu"};
  EXPECT_EQ(json(r), (json{{"id", r.id},
                           {"backend", "cpu"},
                           {"file", r.file},
                           {"outcome", "skip"},
                           {"reason", "needs 2 ranks"},
                           {"seconds", 0.25},
                           {"checks", {{{"kind", "rng"}, {"outcome", "pass"}, {"detail", "equal"}}}}}));
  const RunHeader h{"1.2", "abc123", "cpu", 4, 0xffffffffffffffffull, "2026-01-01T00:00:00Z"};
  EXPECT_EQ(json(h), (json{{"version", "1.2"},
                           {"git_sha", "abc123"},
                           {"backend", "cpu"},
                           {"ranks", 4},
                           {"seed", 0xffffffffffffffffull},
                           {"started_at", "2026-01-01T00:00:00Z"}}));
}

// What the ranks exchange and the report merge reads back (ranks.cpp, merge_reports.cpp).
TEST(ResultJson, ACaseReadsBackItsOutcomeReasonTimeAndChecks) {
  const CaseResult r{.id = "full.uniform",
                     .file = "cases/full/uniform.f32.json",
                     .outcome = Outcome::xfail,
                     .reason = "known",
                     .seconds = 1.5,
                     .checks = {{"masks", Outcome::fail, "mask 3 differs"}, {"memory", Outcome::skip, "no profile"}},
                     .backend = "cpu"};
  const CaseResult back = case_result_from_json(json(r));
  EXPECT_EQ(back.id, r.id);
  EXPECT_EQ(back.file, r.file);
  EXPECT_EQ(back.outcome, Outcome::xfail);
  EXPECT_EQ(back.reason, "known");
  EXPECT_EQ(back.seconds, 1.5);
  ASSERT_EQ(back.checks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.checks[i].kind, r.checks[i].kind);
    EXPECT_EQ(back.checks[i].outcome, r.checks[i].outcome);
    EXPECT_EQ(back.checks[i].detail, r.checks[i].detail);
  }
  EXPECT_EQ(back.backend, "cpu");
  // A failure's execution point and what a check could not judge come back too (a result
  // gathered from another rank or read by merge-reports keeps them).
  CaseResult placed = r;
  placed.checks[0].at = ExecPoint{1, 2, Phase::recompute_draw};
  placed.checks[1].not_judged = {"side effects: not recorded"};
  const CaseResult again = case_result_from_json(json(placed));
  ASSERT_TRUE(again.checks[0].at.has_value());
  EXPECT_EQ(*again.checks[0].at, (ExecPoint{1, 2, Phase::recompute_draw}));
  EXPECT_FALSE(again.checks[1].at.has_value());
  EXPECT_EQ(again.checks[1].not_judged, std::vector<std::string>{"side effects: not recorded"});
  json bad_phase = json(placed);
  bad_phase["checks"][0]["at"]["phase"] = "sideways";
  EXPECT_THROW(case_result_from_json(bad_phase), Error);
  // Only the id and the outcome are required; a bad outcome is refused by name.
  const CaseResult bare = case_result_from_json(json{{"id", "x"}, {"outcome", "pass"}});
  EXPECT_EQ((std::vector<std::string>{bare.file, bare.reason}), (std::vector<std::string>{"", ""}));
  EXPECT_EQ(bare.seconds, 0.0);
  EXPECT_TRUE(bare.checks.empty());
  EXPECT_THROW(case_result_from_json(json{{"outcome", "pass"}}), json::exception);
  EXPECT_THROW(case_result_from_json(json{{"id", "x"}, {"outcome", "passed"}}), Error);
}

}  // namespace
}  // namespace rcts::harness
