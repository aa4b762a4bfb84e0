// Expectation files (harness/expectations/expectation_*.hpp) on hand-written files, case sets
// and results: strict parsing, conflicts, globs, every verdict, stale entries,
// multi-rank runs, the reports and --update-expectations.
#include <gtest/gtest.h>

#include "harness/expectations/case_pattern.hpp"
#include "harness/expectations/expectation_compare.hpp"
#include "harness/expectations/expectation_file.hpp"
#include "harness/expectations/expectation_update.hpp"
#include "harness/cli/expect.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

json file_with(json entries) {
  return {{"format", "rcts-expectations"},
          {"version", 1},
          {"implementation", "pytorch-reentrant"},
          {"implementation_version", "torch 2.15.0"},
          {"entries", std::move(entries)}};
}

ExpectationFile parse(json entries) { return parse_expectation_file(file_with(std::move(entries)), "exp.json"); }

std::string parse_error(const json& j) {
  try {
    parse_expectation_file(j, "exp.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string entry_error(json entry) { return parse_error(file_with(json::array({std::move(entry)}))); }

json fail_entry(const std::string& c, std::vector<std::string> checks) {
  return {{"case", c}, {"outcome", "fail"}, {"checks", checks}, {"reason", "why"}};
}
json skip_entry(const std::string& c) {
  return {{"case", c}, {"outcome", "skip"}, {"skip_reason", "*"}, {"reason", "cannot express it"}};
}

CaseResult result(const std::string& id, Outcome o, std::vector<std::pair<std::string, Outcome>> checks = {},
                  const std::string& reason = "") {
  CaseResult r;
  r.id = id;
  r.file = "cases/" + id + ".json";
  r.backend = "torch-cpu";
  r.outcome = o;
  r.reason = reason;
  for (const auto& [k, ko] : checks) r.checks.push_back({k, ko, k + " detail"});
  return r;
}

TEST(ExpectationFile, ParsesTheAgreedExample) {
  const auto f = parse(json::array({{{"case", "selective.core_attn.f32"},
                                     {"ranks", {1}},
                                     {"outcome", "fail"},
                                     {"checks", {"memory", "bitwise"}},
                                     {"reason", "autograd keeps mean/rstd"},
                                     {"issue", "https://example.org/1"}},
                                    skip_entry("moe.*")}));
  EXPECT_EQ(f.implementation, "pytorch-reentrant");
  EXPECT_EQ(f.implementation_version, "torch 2.15.0");
  ASSERT_EQ(f.entries.size(), 2u);
  EXPECT_EQ(f.entries[0].checks, (std::vector<std::string>{"bitwise", "memory"}));  // sorted
  EXPECT_EQ(f.entries[0].ranks, std::vector<int>{1});
  EXPECT_EQ(f.entries[1].outcome, ExpectedOutcome::skip);
  EXPECT_TRUE(f.entries[1].ranks.empty());
  EXPECT_EQ(f.entries[1].index, 1u);
}

TEST(ExpectationFile, RefusesBadInputNamingPathAndValue) {
  auto has = [](const std::string& err, const std::string& want) {
    EXPECT_NE(err.find(want), std::string::npos) << "error: " << err << "\nwant: " << want;
  };
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"reason", "r"}, {"bogus", 1}}),
      "exp.json: /entries/0/bogus = 1: unknown key 'bogus'");
  has(entry_error({{"case", 3}, {"outcome", "skip"}, {"reason", "r"}}), "/entries/0/case = 3: expected a string");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"skip_reason", "*"}, {"reason", "  "}}), "/entries/0/reason = \"  \": the reason must not be empty");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}}), "/entries/0 = ");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}}), "missing key 'reason'");
  has(entry_error({{"case", "a"}, {"outcome", "xfail"}, {"reason", "r"}}),
      "/entries/0/outcome = \"xfail\": expected \"fail\", \"skip\" or \"error\"");
  has(entry_error(fail_entry("a", {"memory", "speed"})), "/entries/0/checks/1 = \"speed\": unknown check kind");
  has(entry_error(fail_entry("a", {})), "/entries/0/checks = []: empty");
  has(entry_error({{"case", "a"}, {"outcome", "fail"}, {"reason", "r"}}), "missing key 'checks'");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"checks", {"memory"}}, {"reason", "r"}}),
      "/entries/0/checks = [\"memory\"]: a \"skip\" entry names no checks");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"reason", "r"}, {"ranks", {1, 1}}}),
      "/entries/0/ranks/1 = 1: world size listed twice");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"reason", "r"}, {"ranks", {0}}}), "/entries/0/ranks/0 = 0: out of range");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"skip_reason", "*"}, {"reason", "r"}, {"issue", "#12"}}),
      "/entries/0/issue = \"#12\": expected a URL");
  has(entry_error({{"case", "moe.[ab"}, {"outcome", "skip"}, {"reason", "r"}}), "unclosed '['");
  has(entry_error({{"case", "a"}, {"outcome", "skip"}, {"skip_reason", "*"}, {"reason", "TODO(review): x"}}), "placeholder");
  json j = file_with(json::array());
  j["format"] = "rcts-results";
  has(parse_error(j), "/format = \"rcts-results\": not an expectation file");
  j = file_with(json::array());
  j["version"] = 2;
  has(parse_error(j), "/version = 2: this rcts reads expectation format version 1");
  j = file_with(json::array());
  j.erase("implementation_version");
  has(parse_error(j), "missing key 'implementation_version'");
}

TEST(ExpectationFile, TheSamePatternTwiceConflicts) {
  const std::string err =
      parse_error(file_with(json::array({skip_entry("moe.a"), fail_entry("moe.b", {"memory"}), fail_entry("moe.a", {"rng"})})));
  EXPECT_NE(err.find("/entries/2/case"), std::string::npos) << err;
  EXPECT_NE(err.find("conflicts with entry 0 ('moe.a')"), std::string::npos) << err;
  // At different world sizes the same pattern is two entries, not a conflict.
  json a = skip_entry("moe.a"), b = fail_entry("moe.a", {"rng"});
  a["ranks"] = {1};
  b["ranks"] = {2, 4};
  EXPECT_EQ(parse_error(file_with(json::array({a, b}))), "");
}

TEST(ExpectationFile, GlobsOverCaseIds) {
  const auto f = parse(json::array({skip_entry("moe.*"), skip_entry("full.block.?f16"), skip_entry("rng.[ab]*"),
                                    skip_entry("rng.[!ab]x")}));
  EXPECT_TRUE(f.entries[0].matches("moe.tp2.ep2"));  // '*' crosses dots
  EXPECT_FALSE(f.entries[0].matches("moex"));
  EXPECT_TRUE(f.entries[1].matches("full.block.bf16"));
  EXPECT_FALSE(f.entries[1].matches("full.block.f16"));
  EXPECT_TRUE(f.entries[2].matches("rng.b_only"));
  EXPECT_FALSE(f.entries[2].matches("rng.c"));
  EXPECT_TRUE(f.entries[3].matches("rng.cx"));
  EXPECT_FALSE(f.entries[3].matches("rng.ax"));
}

TEST(ExpectationFile, ConflictsOverACaseSetNameBothEntries) {
  json narrow = fail_entry("moe.tp2", {"memory"});
  const auto f = parse(json::array({skip_entry("moe.*"), narrow}));
  const std::vector<CaseInfo> cases = {{"moe.tp2", {1, 2}}, {"moe.ep2", {2}}, {"full.block", {1}}};
  const auto c = expectation_conflicts(f, cases);
  ASSERT_EQ(c.size(), 2u);  // moe.tp2 at 1 and at 2 ranks
  EXPECT_NE(c[0].find("/entries/0 and /entries/1 conflict"), std::string::npos) << c[0];
  EXPECT_NE(c[0].find("case 'moe.tp2' at 1 rank(s)"), std::string::npos) << c[0];
  EXPECT_NE(c[1].find("at 2 rank(s)"), std::string::npos) << c[1];
  EXPECT_THROW(refuse_conflicts(f, cases), Error);
  // Multi-rank: split by world size, the two no longer meet.
  json wide = skip_entry("moe.*"), at1 = fail_entry("moe.tp2", {"memory"});
  wide["ranks"] = {2};
  at1["ranks"] = {1};
  EXPECT_TRUE(expectation_conflicts(parse(json::array({wide, at1})), cases).empty());
}

TEST(ExpectationFile, CanonicalTextRoundTrips) {
  json e = fail_entry("selective.x", {"memory"});
  e["ranks"] = {1, 2};
  e["issue"] = "https://example.org/7";
  const auto f = parse(json::array({e, skip_entry("moe.*")}));
  const std::string text = expectation_file_text(f);
  EXPECT_NE(text.find("      \"ranks\": [1, 2],\n      \"outcome\": \"fail\",\n      \"checks\": [\"memory\"],\n"),
            std::string::npos)
      << text;
  const auto again = parse_expectation_file(json::parse(text), "again.json");
  EXPECT_EQ(expectation_file_text(again), text);
  EXPECT_EQ(expectation_file_text(parse(json::array())), std::string(R"({
  "format": "rcts-expectations",
  "version": 1,
  "implementation": "pytorch-reentrant",
  "implementation_version": "torch 2.15.0",
  "entries": []
}
)"));
}

struct Compared {
  ExpectationFile f;
  std::vector<CaseResult> results;
  ExpectationComparison cmp;
};

// Every outcome class at one world size.
class Verdicts : public ::testing::Test {
 protected:
  void SetUp() override {
    f = parse(json::array({fail_entry("fail.same", {"memory"}), fail_entry("fail.other", {"memory"}),
                           fail_entry("fixed", {"rng"}), skip_entry("skip.*"), fail_entry("skipped.fail", {"masks"}),
                           skip_entry("ran.fail"), fail_entry("errored", {"bitwise"}), skip_entry("nowhere.*"),
                           fail_entry("multi.at2", {"rng"})}));
    cases = {{"ok", {1}},          {"fail.same", {1}},   {"fail.other", {1}}, {"fixed", {1}},
             {"skip.a", {1}},      {"new.fail", {1}},    {"new.skip", {1}},   {"skipped.fail", {1}},
             {"ran.fail", {1}},    {"errored", {1}},     {"xf", {1}},         {"multi.at2", {2}}};
    results = {result("ok", Outcome::pass, {{"bitwise", Outcome::pass}}),
               result("fail.same", Outcome::fail, {{"bitwise", Outcome::pass}, {"memory", Outcome::fail}}),
               result("fail.other", Outcome::fail, {{"bitwise", Outcome::fail}, {"memory", Outcome::fail}}),
               result("fixed", Outcome::pass, {{"rng", Outcome::pass}}),
               result("skip.a", Outcome::skip, {}, "not expressible"),
               result("new.fail", Outcome::fail, {{"masks", Outcome::fail}}, "first divergence: masks"),
               result("new.skip", Outcome::skip, {}, "not dumped"),
               result("skipped.fail", Outcome::skip, {}, "adapter skipped"),
               result("ran.fail", Outcome::fail, {{"rng", Outcome::fail}}),
               result("errored", Outcome::error, {}, "could not read the dump"),
               result("xf", Outcome::xfail, {{"memory", Outcome::fail}}),
               result("multi.at2", Outcome::skip, {}, "needs 2 ranks, this check has 1")};
    here = std::vector<bool>(results.size(), true);
    here.back() = false;
  }
  ExpectationComparison compare(bool strict) { return compare_expectations(f, cases, results, here, 1, strict); }
  ExpectationFile f;
  std::vector<CaseInfo> cases;
  std::vector<CaseResult> results;
  std::vector<bool> here;
};

TEST_F(Verdicts, EveryOutcomeClass) {
  const auto cmp = compare(false);
  const std::vector<Verdict> want = {Verdict::pass,           Verdict::expected_fail,   Verdict::different_failure,
                                     Verdict::unexpected_pass, Verdict::expected_skip,  Verdict::regression,
                                     Verdict::unexpected_skip, Verdict::unexpected_skip, Verdict::regression,
                                     Verdict::different_failure, Verdict::xfail,        Verdict::not_applicable};
  ASSERT_EQ(cmp.results.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(verdict_name(cmp.results[i].verdict), verdict_name(want[i])) << results[i].id;
  EXPECT_EQ(cmp.results[2].note, "expected to fail [memory] (entry 1 ('fail.other')), failed [bitwise, memory]");
  EXPECT_EQ(cmp.results[5].note, "expected to pass, failed [masks]");
  EXPECT_EQ(cmp.results[7].note, "expected to fail [masks] (entry 4 ('skipped.fail')), skipped: adapter skipped");
  EXPECT_EQ(cmp.results[9].note, "expected to fail [bitwise] (entry 6 ('errored')), errored: could not read the dump");
  EXPECT_EQ(cmp.results[3].note, "expected to fail [rng] (entry 2 ('fixed')), passed: remove the entry");
  // Entries: the one for no case is stale; the one only for a case rcts does not run
  // here (2 ranks) is not in this run, and not stale.
  EXPECT_EQ(cmp.entries[7].status, EntryStatus::stale);
  EXPECT_EQ(cmp.entries[8].status, EntryStatus::not_in_run);
  EXPECT_EQ(cmp.entries[8].matches, 0);
  EXPECT_EQ(cmp.entries[3].status, EntryStatus::matched);
  EXPECT_EQ(cmp.entries[3].matches, 1);
  EXPECT_EQ(cmp.stale(), 1);
  EXPECT_FALSE(cmp.ok());
}

TEST_F(Verdicts, OnlyUnexpectedPassesAndStaleEntriesAreWarnings) {
  // Keep the unexpected pass and the stale entry; drop every other difference.
  const std::vector<size_t> keep = {0, 1, 3, 4, 10, 11};
  std::vector<CaseResult> r;
  std::vector<bool> h;
  for (size_t i : keep) {
    r.push_back(results[i]);
    h.push_back(here[i]);
  }
  const auto lax = compare_expectations(f, cases, r, h, 1, false);
  EXPECT_TRUE(lax.ok());
  EXPECT_EQ(lax.count(Verdict::unexpected_pass), 1);
  const auto strict = compare_expectations(f, cases, r, h, 1, true);
  EXPECT_FALSE(strict.ok());
  // Strict without the unexpected pass still fails on the stale entry.
  r.erase(r.begin() + 2);
  h.erase(h.begin() + 2);
  EXPECT_FALSE(compare_expectations(f, cases, r, h, 1, true).ok());
  EXPECT_TRUE(compare_expectations(f, cases, r, h, 1, false).ok());
}

TEST_F(Verdicts, SummaryJsonAndJunitCarryTheDistinction) {
  const auto cmp = compare(false);
  const std::string text = expectation_summary(cmp, results);
  for (const char* want : {"REGRESSION         new.fail [torch-cpu]: expected to pass, failed [masks]",
                           "UNEXPECTED-PASS    fixed [torch-cpu]: expected to fail [rng] (entry 2 ('fixed')), passed: "
                           "remove the entry (warning)",
                           "DIFFERENT-FAILURE  fail.other", "UNEXPECTED-SKIP    new.skip",
                           "STALE-ENTRY        entry 7 ('nowhere.*'): matches no case (warning)", "expectations NOT met"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;

  RunHeader h{"0.1.0", "abc", "dumps", 1, 0, "now"};
  json j = results_json(h, results);
  add_expectations_json(j, cmp);
  EXPECT_EQ(j["cases"][1]["expectation"], json({{"verdict", "expected-fail"}, {"entry", 0}, {"note", ""}}));
  EXPECT_EQ(j["cases"][0]["expectation"]["entry"], nullptr);
  EXPECT_EQ(j["cases"][1]["outcome"], "fail");  // the raw outcome stays
  EXPECT_EQ(j["expectations"]["counts"]["regression"], 2);
  EXPECT_EQ(j["expectations"]["counts"]["stale-entry"], 1);
  EXPECT_EQ(j["expectations"]["ok"], false);
  EXPECT_EQ(j["expectations"]["entries"][7], json({{"index", 7}, {"case", "nowhere.*"}, {"status", "stale-entry"}, {"matches", 0}}));

  const auto view = junit_view(cmp, results);
  ASSERT_EQ(view.size(), results.size() + 1);  // and the stale entry
  EXPECT_EQ(view[1].outcome, Outcome::xfail);
  EXPECT_EQ(view[1].reason.rfind("expected-fail (entry 0 ('fail.same'): why)", 0), 0u) << view[1].reason;
  EXPECT_EQ(view[3].outcome, Outcome::pass);  // unexpected pass: a warning
  EXPECT_EQ(view[5].outcome, Outcome::fail);
  EXPECT_EQ(view[5].reason.rfind("regression: expected to pass", 0), 0u);
  EXPECT_EQ(view[6].outcome, Outcome::fail);
  EXPECT_EQ(view[6].reason.rfind("unexpected-skip: ", 0), 0u);
  EXPECT_EQ(view[9].outcome, Outcome::error);
  EXPECT_EQ(view.back().outcome, Outcome::skip);
  EXPECT_EQ(view.back().id, "expectations.entry 7 ('nowhere.*')");
  const std::string xml = junit_xml(h, view);
  EXPECT_NE(xml.find("<skipped message=\"xfail: expected-fail (entry 0"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure type=\"fail\" message=\"regression: expected to pass, failed [masks]"), std::string::npos);
  const auto strict = junit_view(compare(true), results);
  EXPECT_EQ(strict[3].outcome, Outcome::fail);
  EXPECT_EQ(strict.back().outcome, Outcome::fail);
}

TEST(ExpectationCompare, MultiRankRunsUseTheEntriesOfTheirWorldSize) {
  json at1 = fail_entry("tp.x", {"memory"}), at2 = fail_entry("tp.x", {"tp_replicas"});
  at1["ranks"] = {1};
  at2["ranks"] = {2};
  const auto f = parse(json::array({at1, at2}));
  const std::vector<CaseInfo> cases = {{"tp.x", {1, 2}}};
  const std::vector<CaseResult> np2 = {result("tp.x", Outcome::fail, {{"tp_replicas", Outcome::fail}})};
  auto cmp = compare_expectations(f, cases, np2, {true}, 2, true);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::expected_fail);
  EXPECT_EQ(*cmp.results[0].entry, 1u);
  EXPECT_EQ(cmp.entries[0].status, EntryStatus::not_in_run);  // the 1-rank entry: not stale
  EXPECT_TRUE(cmp.ok());
  // The same failure at 1 rank is a different failure.
  cmp = compare_expectations(f, cases, np2, {true}, 1, false);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::different_failure);
  // An entry for a world size the case never runs at matches no case.
  json at4 = skip_entry("tp.x");
  at4["ranks"] = {4};
  cmp = compare_expectations(parse(json::array({at4})), cases, np2, {true}, 2, false);
  EXPECT_EQ(cmp.entries[0].status, EntryStatus::stale);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::regression);
}

TEST(ExpectationCompare, AnExpectedSkipForAnotherReasonIsARegression) {
  json e = skip_entry("moe.*");
  e["skip_reason"] = "*MoE experts are not mapped*";
  const auto f = parse(json::array({e}));
  const std::vector<CaseInfo> cases = {{"moe.ep1", {1}}};
  const auto same = result("moe.ep1", Outcome::skip, {}, "skipped by the implementation: MoE experts are not mapped");
  auto cmp = compare_expectations(f, cases, {same}, {true}, 1, false);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::expected_skip);
  EXPECT_TRUE(cmp.ok());
  // The adapter crashed in its own seeding: a skip, but not the one the entry expects.
  const auto crash = result("moe.ep1", Outcome::skip, {}, "skipped by the implementation: raised TypeError: seed");
  cmp = compare_expectations(f, cases, {crash}, {true}, 1, false);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::regression);
  EXPECT_EQ(cmp.results[0].note, "expected to be skipped for a reason matching '*MoE experts are not mapped*' "
                                 "(entry 0 ('moe.*')), skipped for another: skipped by the "
                                 "implementation: raised TypeError: seed");
  EXPECT_FALSE(cmp.ok());
  // Only a skip entry names a skip reason; the text round-trips.
  json bad = fail_entry("moe.*", {"memory"});
  bad["skip_reason"] = "*x*";
  EXPECT_NE(entry_error(bad).find("/entries/0/skip_reason"), std::string::npos);
  EXPECT_EQ(parse_expectation_file(json::parse(expectation_file_text(f)), "again.json").entries[0].reason_pattern,
            "*MoE experts are not mapped*");
}

json error_entry(const std::string& c, const std::string& pattern) {
  return {{"case", c}, {"outcome", "error"}, {"error_reason", pattern}, {"reason", "megatron-core raises here"}};
}

TEST(ExpectationFile, ASkipOrAnErrorNamesItsReason) {
  EXPECT_NE(entry_error({{"case", "moe.*"}, {"outcome", "skip"}, {"reason", "r"}})
                .find("missing key 'skip_reason': a \"skip\" entry names the skip's reason"),
            std::string::npos);
  EXPECT_NE(entry_error({{"case", "a"}, {"outcome", "error"}, {"reason", "r"}}).find("missing key 'error_reason'"),
            std::string::npos);
  json wrong = error_entry("a", "*x*");
  wrong["skip_reason"] = "*x*";
  EXPECT_NE(entry_error(wrong).find("/entries/0/skip_reason = \"*x*\": only a \"skip\" entry has it"), std::string::npos)
      << entry_error(wrong);
  json on_fail = fail_entry("a", {"memory"});
  on_fail["error_reason"] = "*x*";
  EXPECT_NE(entry_error(on_fail).find("/entries/0/error_reason"), std::string::npos);
  json checks = error_entry("a", "*x*");
  checks["checks"] = {"memory"};
  EXPECT_NE(entry_error(checks).find("a \"error\" entry names no checks"), std::string::npos);
  // Patterns are refused where rcts would not match them as written.
  EXPECT_NE(entry_error(error_entry("a", "*[RuntimeError*")).find("an unclosed '['"), std::string::npos);
  EXPECT_NE(entry_error(error_entry("a", "x\ty")).find("byte 0x09 at offset 1"), std::string::npos);
  EXPECT_NE(entry_error(error_entry("a", "  ")).find("an empty reason pattern"), std::string::npos);
  EXPECT_NE(entry_error(error_entry("a", "[\xc3\xa9]")).find("printable ASCII only"), std::string::npos);
  // Round trip, keys in the documented order.
  const auto f = parse(json::array({error_entry("a", "*boom [[]x]*")}));
  const std::string text = expectation_file_text(f);
  EXPECT_NE(text.find("\"outcome\": \"error\",\n      \"error_reason\": \"*boom [[]x]*\",\n      \"reason\""),
            std::string::npos)
      << text;
  EXPECT_EQ(parse_expectation_file(json::parse(text), "again.json").entries[0].reason_pattern, "*boom [[]x]*");
}

TEST(ExpectationFile, ReasonPatternsMatchFreeTextLiterally) {
  EXPECT_TRUE(reason_pattern_matches("*dense layers only*", "skipped by the implementation: dense layers only (MoE)"));
  EXPECT_FALSE(reason_pattern_matches("*dense layers only", "dense layers only (MoE)"));  // anchored at the end
  EXPECT_TRUE(reason_pattern_matches("a\\b?c", "a\\bXc"));  // a backslash is itself, not an escape
  EXPECT_TRUE(reason_pattern_matches("list[[]0]", "list[0]"));
  EXPECT_FALSE(reason_pattern_matches("list[[]0]", "list0]"));
  const std::string text = "run 'full': IndexError: list index [3] * 2? at layer.py:7";
  const std::string lit = literal_reason_pattern(text);
  EXPECT_EQ(lit, "run 'full': IndexError: list index [[]3] [*] 2[?] at layer.py:7");
  EXPECT_FALSE(reason_pattern_error(lit).has_value());
  EXPECT_TRUE(reason_pattern_matches(lit, text));
  EXPECT_FALSE(reason_pattern_matches(lit, "run 'full': IndexError: list index 3 * 2? at layer.py:7"));
  EXPECT_FALSE(reason_pattern_matches(lit, "run 'full': IndexError: list index [3] x 2? at layer.py:7"));
}

TEST(ExpectationCompare, AnExpectedErrorIsTheOneItsPatternNames) {
  const auto f = parse(json::array({error_entry("full.uniform", "*IndexError: list index out of range*")}));
  const std::vector<CaseInfo> cases = {{"full.uniform", {1}}};
  auto judged = [&](const CaseResult& r) { return compare_expectations(f, cases, {r}, {true}, 1, false); };
  const std::string raised = std::string(kImplementationRaised) + "run 'full': IndexError: list index out of range";
  auto cmp = judged(result("full.uniform", Outcome::error, {}, raised));
  EXPECT_EQ(cmp.results[0].verdict, Verdict::expected_error);
  EXPECT_TRUE(cmp.ok());
  // The framework raising something else, failing its checks, being skipped or passing:
  // each a difference the run reports.
  cmp = judged(result("full.uniform", Outcome::error, {}, std::string(kImplementationRaised) + "TypeError: seed"));
  EXPECT_EQ(cmp.results[0].verdict, Verdict::different_failure);
  EXPECT_EQ(cmp.results[0].note, "expected to error with a reason matching '*IndexError: list index out of range*' "
                                 "(entry 0 ('full.uniform')), errored: the implementation raised: TypeError: seed");
  EXPECT_FALSE(cmp.ok());
  EXPECT_EQ(judged(result("full.uniform", Outcome::fail, {{"rng", Outcome::fail}})).results[0].verdict,
            Verdict::different_failure);
  EXPECT_EQ(judged(result("full.uniform", Outcome::skip, {}, "not dumped")).results[0].verdict, Verdict::unexpected_skip);
  EXPECT_EQ(judged(result("full.uniform", Outcome::pass)).results[0].verdict, Verdict::unexpected_pass);
  // A skip entry never absorbs a raise, and a raise without an entry is a regression.
  const auto skips = parse(json::array({skip_entry("full.*")}));
  EXPECT_EQ(compare_expectations(skips, cases, {result("full.uniform", Outcome::error, {}, raised)}, {true}, 1, false)
                .results[0]
                .verdict,
            Verdict::regression);
  // --update-expectations proposes an error entry for a raise, pinned by its message;
  // and a skip entry pinned by its reason.
  const auto none = parse(json::array());
  const std::vector<CaseInfo> two = {{"full.uniform", {1}}, {"moe.ep1", {1}}};
  const std::vector<CaseResult> rs = {result("full.uniform", Outcome::error, {}, raised),
                                      result("moe.ep1", Outcome::skip, {}, "skipped by the implementation: MoE [dense*]")};
  const auto up = propose_update(compare_expectations(none, two, rs, {true, true}, 1, false), two, rs);
  ASSERT_EQ(up.added.size(), 2u);
  EXPECT_EQ(up.added[0], "full.uniform: expect error (regression); give the reason");
  ASSERT_EQ(up.proposed.entries.size(), 2u);
  EXPECT_EQ(up.proposed.entries[0].outcome, ExpectedOutcome::error);
  EXPECT_EQ(up.proposed.entries[0].reason_pattern, raised);
  EXPECT_EQ(up.proposed.entries[1].reason_pattern, "skipped by the implementation: MoE [[]dense[*]]");
  EXPECT_TRUE(up.by_hand.empty());
}

TEST(ExpectationCompare, UnknownCaseIdsAreStaleEntries) {
  const auto f = parse(json::array({skip_entry("selective.no_such_case"), skip_entry("selective.a")}));
  const std::vector<CaseInfo> cases = {{"selective.a", {1}}};
  const auto cmp = compare_expectations(f, cases, {result("selective.a", Outcome::skip)}, {true}, 1, false);
  EXPECT_EQ(cmp.entries[0].status, EntryStatus::stale);
  EXPECT_EQ(cmp.results[0].verdict, Verdict::expected_skip);
  EXPECT_TRUE(cmp.ok());
  EXPECT_FALSE(compare_expectations(f, cases, {result("selective.a", Outcome::skip)}, {true}, 1, true).ok());
}

TEST_F(Verdicts, UpdateProposesAReviewableFile) {
  const auto cmp = compare(false);
  const auto up = propose_update(cmp, cases, results);
  ASSERT_TRUE(up.changes());
  // Added: the regression and the unexpected skip, with placeholders.
  ASSERT_EQ(up.added.size(), 2u);
  EXPECT_EQ(up.added[0], "new.fail: expect fail [masks] (regression); give the reason");
  EXPECT_EQ(up.added[1], "new.skip: expect skip (unexpected-skip); give the reason");
  // Removed: the fixed entry (it covers only the case that now passes) and the stale one.
  ASSERT_EQ(up.removed.size(), 2u);
  EXPECT_EQ(up.removed[0], "entry 2 ('fixed'): fixed passes (why)");
  EXPECT_EQ(up.removed[1], "entry 7 ('nowhere.*'): matches no case (cannot express it)");
  // Changed: entries that cover exactly the case that differs, and the expected
  // failure whose entry pinned no signature yet.
  EXPECT_EQ(up.changed, (std::vector<std::string>{
                            "fail.same: pinned the signature of its expected failure (the reason stands)",
                            "fail.other: expected to fail [memory] (entry 1 ('fail.other')), failed [bitwise, memory]; "
                            "check the reason",
                            "skipped.fail: expected to fail [masks] (entry 4 ('skipped.fail')), skipped: adapter skipped; "
                            "check the reason",
                            "ran.fail: expected to be skipped for a reason matching '*' (entry 5 ('ran.fail')), ran and failed [rng]; "
                            "check the reason"}));
  EXPECT_EQ(up.by_hand.size(), 1u);  // errored: an error is no expectation
  EXPECT_NE(up.by_hand[0].find("an error is no expectation"), std::string::npos);
  const std::string text = expectation_file_text(up.proposed);
  EXPECT_NE(text.find("\"case\": \"new.fail\",\n      \"outcome\": \"fail\",\n      \"checks\": [\"masks\"],\n"
                      "      \"signature\": [\n        {\"check\": \"masks\", \"run\": \"\", \"differs\": \"masks detail\"}\n"
                      "      ],\n      \"reason\": \"TODO(review): first divergence: masks\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"checks\": [\"bitwise\", \"memory\"],\n      \"signature\": [\n"
                      "        {\"check\": \"bitwise\", \"run\": \"\", \"differs\": \"bitwise detail\"},\n"
                      "        {\"check\": \"memory\", \"run\": \"\", \"differs\": \"memory detail\"}\n"
                      "      ],\n      \"reason\": \"TODO(review): was: why\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("\"fixed\""), std::string::npos);
  EXPECT_EQ(text.find("nowhere"), std::string::npos);
  // Unreviewed, the proposal is refused.
  try {
    parse_expectation_file(json::parse(text), "exp.json.new");
    ADD_FAILURE() << "the placeholder was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("placeholder left by --update-expectations"), std::string::npos) << e.what();
  }
}

TEST(ExpectationUpdate, AGlobCoveringMoreIsLeftForAHandEdit) {
  const auto f = parse(json::array({skip_entry("moe.*")}));
  const std::vector<CaseInfo> cases = {{"moe.a", {1}}, {"moe.b", {1, 2}}};
  const std::vector<CaseResult> results = {result("moe.a", Outcome::pass), result("moe.b", Outcome::skip)};
  const auto cmp = compare_expectations(f, cases, results, {true, true}, 1, false);
  const auto up = propose_update(cmp, cases, results);
  EXPECT_FALSE(up.changes());
  ASSERT_EQ(up.by_hand.size(), 1u);
  EXPECT_NE(up.by_hand[0].find("entry 0 ('moe.*'): moe.a passes at 1 rank(s), but the entry covers more"),
            std::string::npos)
      << up.by_hand[0];
}

TEST(ExpectationUpdate, UnifiedDiff) {
  EXPECT_EQ(unified_diff("a\nb\n", "a\nb\n", "x", "y"), "");
  EXPECT_EQ(unified_diff("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", "old", "new"),
            "--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
  EXPECT_EQ(unified_diff("a\n", "a\nb\n", "old", "new"), "--- old\n+++ new\n@@ -1,1 +1,2 @@\n a\n+b\n");
  EXPECT_EQ(unified_diff("", "b\n", "old", "new"), "--- old\n+++ new\n@@ -0,0 +1,1 @@\n+b\n");
}

}  // namespace
}  // namespace rcts::harness
