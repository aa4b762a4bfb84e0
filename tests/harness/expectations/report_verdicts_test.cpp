// What `rcts matrix` and `rcts merge-reports` make of results JSONs: reports that
// contradict themselves or come from different rcts builds are refused (exact messages),
// judging never pairs a verdict with an outcome the consistency rule refuses, and the
// merged rows, totals, JUnit attributes and exit status equal the counts taken from the
// cases themselves, for every outcome at every world size.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "harness/expectations/expectation_compare.hpp"
#include "harness/expectations/report_consistency.hpp"
#include "harness/reports/merge_reports.hpp"
#include "reference/core/error.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

CaseResult result(const std::string& id, Outcome o, std::vector<std::string> failing = {}, double seconds = 0.5) {
  CaseResult r;
  r.id = id;
  r.file = "cases/" + id + ".json";
  r.backend = "cpu";
  r.outcome = o;
  r.seconds = seconds;
  if (o == Outcome::pass) r.checks.push_back({"bitwise", Outcome::pass, "baseline: equal"});
  for (const auto& k : failing) r.checks.push_back({k, Outcome::fail, "baseline: " + k + " differs"});
  if (o == Outcome::error) r.reason = "threw";
  return r;
}

RunHeader header(int ranks, const std::string& sha = "abc", uint64_t seed = 0) {
  return {"0.1.0", sha, "cpu", ranks, seed, "2026-01-01T00:00:00Z"};
}

// A report under an expectation file: a pass, a regression, an expected failure, an
// expected skip.
json judged_report() {
  const json entries = std::vector<json>{
      {{"case", "c.exp"}, {"outcome", "fail"}, {"checks", {"memory"}}, {"reason", "r"}},
      {{"case", "c.skip"}, {"outcome", "skip"}, {"skip_reason", "*"}, {"reason", "r"}},
  };
  static const ExpectationFile f = parse_expectation_file(
      {{"format", "rcts-expectations"}, {"version", 1}, {"implementation", "t"}, {"implementation_version", "1"},
       {"entries", entries}},
      "e.json");
  const std::vector<CaseResult> results = {result("c.pass", Outcome::pass), result("c.fail", Outcome::fail, {"masks"}),
                                           result("c.exp", Outcome::fail, {"memory"}), result("c.skip", Outcome::skip)};
  const std::vector<CaseInfo> cases = {{"c.pass", {1}}, {"c.fail", {1}}, {"c.exp", {1}}, {"c.skip", {1}}};
  const auto cmp = compare_expectations(f, cases, results, {true, true, true, true}, 1, false);
  json doc = results_json(header(1), results);
  add_expectations_json(doc, cmp);
  return doc;
}

std::string refusal(const json& doc) {
  try {
    check_results_consistency(doc, "r.json");
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(ReportConsistency, SelfContradictoryReportsAreRefused) {
  const json good = judged_report();
  EXPECT_EQ(refusal(good), "");
  json plain = results_json(header(1), {result("a", Outcome::pass), result("b", Outcome::xfail, {"memory"})});
  EXPECT_EQ(refusal(plain), "");
  const std::vector<std::pair<std::function<void(json&)>, std::string>> table = {
      {[](json& d) { d["cases"][0]["checks"][0]["outcome"] = "fail"; },
       "r.json: /cases/0/outcome = \"pass\": but /cases/0/checks/0 (\"bitwise\") failed: a case with a failing check "
       "does not pass"},
      {[](json& d) { d["cases"][1]["outcome"] = "passed"; },
       "r.json: /cases/1/outcome = \"passed\": expected pass, fail, skip, xfail or error"},
      {[](json& d) { d["cases"][1]["expectation"]["verdict"] = "fine"; },
       "r.json: /cases/1/expectation/verdict = \"fine\": unknown verdict"},
      {[](json& d) { d["cases"][0]["expectation"]["verdict"] = "expected-fail"; },
       "r.json: /cases/0/expectation/verdict = \"expected-fail\": contradicts /cases/0/outcome = \"pass\": judging never "
       "gives it to that outcome"},
      {[](json& d) { d["cases"][3]["expectation"]["verdict"] = "pass"; },
       "r.json: /cases/3/expectation/verdict = \"pass\": contradicts /cases/3/outcome = \"skip\": judging never gives it "
       "to that outcome"},
      {[](json& d) { d["summary"]["failed"] = 1; }, "r.json: /summary/failed = 1: the cases count 2 failed"},
      {[](json& d) { d["summary"].erase("errors"); },
       "r.json: /summary = {\"failed\":2,\"passed\":1,\"skipped\":1,\"total\":4,\"xfail\":0}: the cases count 0 errors"},
      {[](json& d) { d["expectations"]["counts"]["regression"] = 0; },
       "r.json: /expectations/counts/regression = 0: the cases' verdicts count 1 regression"},
      {[](json& d) { d["expectations"]["counts"]["stale-entry"] = 2; },
       "r.json: /expectations/counts/stale-entry = 2: the entries count 0 stale-entry"},
      {[](json& d) { d["expectations"]["ok"] = true; }, "r.json: /expectations/ok = true: the cases' verdicts say false"},
  };
  for (const auto& [mutate, want] : table) {
    json d = good;
    mutate(d);
    EXPECT_EQ(refusal(d), want);
  }
  // A case without a verdict beside cases with one, and a verdict without the section.
  json d = good;
  d["cases"][2].erase("expectation");
  std::string got = refusal(d);
  EXPECT_EQ(got.substr(0, 19), "r.json: /cases/2 = ");
  EXPECT_EQ(got.substr(got.rfind(": no")), ": no \"expectation\", but the report has an \"expectations\" section");
  d = good;
  d.erase("expectations");
  got = refusal(d);
  EXPECT_EQ(got.substr(0, 31), "r.json: /cases/0/expectation = ");
  EXPECT_EQ(got.substr(got.rfind(": a verdict")), ": a verdict in a report without an \"expectations\" section");
  // Strict changes nothing here: the regression already makes ok false.
  d = good;
  d["expectations"]["strict"] = true;
  EXPECT_EQ(refusal(d), "");  // already false
}

TEST(ReportConsistency, ReportsOfDifferentBuildsOrSeedsAreRefused) {
  const json a = results_json(header(1, "abc", 0), {result("a", Outcome::pass)});
  auto refuse = [&](const json& b) {
    try {
      check_same_rcts({{"a.json", &a}, {"b.json", &b}});
    } catch (const Error& e) {
      return e.message();
    }
    return std::string();
  };
  EXPECT_EQ(refuse(results_json(header(2, "abc", 0), {result("a", Outcome::pass)})), "");
  EXPECT_EQ(refuse(results_json(header(2, "def", 0), {})),
            "b.json: /header/git_sha = \"def\", but a.json: /header/git_sha = \"abc\": reports of different rcts builds "
            "or seeds are not one result set (rerun them with one rcts)");
  EXPECT_EQ(refuse(results_json(header(2, "abc", 7), {})),
            "b.json: /header/seed = 7, but a.json: /header/seed = 0: reports of different rcts builds or seeds are not "
            "one result set (rerun them with one rcts)");
  json v = results_json(header(2), {});
  v["header"]["version"] = "0.2.0";
  EXPECT_EQ(refuse(v),
            "b.json: /header/version = \"0.2.0\", but a.json: /header/version = \"0.1.0\": reports of different rcts "
            "builds or seeds are not one result set (rerun them with one rcts)");
}

// Every verdict judging gives is one the consistency rule accepts for its outcome.
TEST(ReportConsistency, JudgingNeverContradictsTheRule) {
  const std::vector<json> entry_kinds = {
      nullptr,
      {{"case", "x"}, {"outcome", "fail"}, {"checks", {"memory"}}, {"reason", "r"}},
      {{"case", "x"}, {"outcome", "fail"}, {"checks", {"memory"}}, {"reason", "r"},
       {"signature", std::vector<json>{{{"check", "memory"}, {"run", "baseline"}, {"differs", "memory differs"}}}}},
      {{"case", "x"}, {"outcome", "skip"}, {"skip_reason", "*"}, {"reason", "r"}},
      {{"case", "x"}, {"outcome", "skip"}, {"skip_reason", "*dense only*"}, {"reason", "r"}},
      {{"case", "x"}, {"outcome", "error"}, {"error_reason", "*"}, {"reason", "r"}},
      {{"case", "x"}, {"outcome", "error"}, {"error_reason", "*boom*"}, {"reason", "r"}},
  };
  const std::vector<std::vector<std::string>> failing = {{}, {"memory"}, {"masks"}, {"masks", "memory"}};
  int judged = 0;
  for (const auto& entry : entry_kinds) {
    json file = {{"format", "rcts-expectations"}, {"version", 1}, {"implementation", "t"}, {"implementation_version", "1"},
                 {"entries", json::array()}};
    if (!entry.is_null()) file["entries"].push_back(entry);
    const auto f = parse_expectation_file(file, "e.json");
    for (Outcome o : {Outcome::pass, Outcome::fail, Outcome::skip, Outcome::xfail, Outcome::error})
      for (const auto& checks : failing)
        for (bool here : {true, false}) {
          if (o == Outcome::pass && !checks.empty()) continue;  // refused as a contradiction of its own
          const auto cmp = compare_expectations(f, {{"x", {1}}}, {result("x", o, checks)}, {here}, 1, true);
          EXPECT_TRUE(verdict_allows(cmp.results[0].verdict, o))
              << verdict_name(cmp.results[0].verdict) << " for " << outcome_name(o);
          ++judged;
        }
  }
  EXPECT_EQ(judged, 7 * (4 * 4 * 2 + 2));
}

// --- merge-reports --------------------------------------------------------------------

WorldSizeResults size_of(int ranks, const std::vector<CaseResult>& cases) {
  WorldSizeResults w = results_from_json(results_json(header(ranks), cases), "np" + std::to_string(ranks) + ".json");
  w.file = "np" + std::to_string(ranks) + ".json";
  return w;
}

WorldSizeResults not_run(int ranks, WorldSizeResults::Status s) {
  WorldSizeResults w;
  w.ranks = ranks;
  w.status = s;
  w.reason = "no MPI";
  return w;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t nl = s.find('\n', at);
    out.push_back(s.substr(at, nl - at));
    at = nl == std::string::npos ? s.size() : nl + 1;
  }
  return out;
}

std::string testsuites_line(const std::string& xml) { return lines(xml).at(1); }

TEST(MergeReports, RowsTotalsJunitAndExitStatusOfEveryOutcome) {
  const std::vector<WorldSizeResults> sizes = {
      size_of(1, {result("p", Outcome::pass), result("f", Outcome::fail, {"masks"}), result("e", Outcome::error),
                  result("s", Outcome::skip), result("x", Outcome::xfail, {"memory"})}),
      size_of(2, {result("p", Outcome::pass), result("e", Outcome::error)}),
      not_run(4, WorldSizeResults::Status::skipped)};
  const auto text = lines(merged_summary(sizes));
  EXPECT_EQ(std::vector<std::string>(text.begin() + 2, text.begin() + 8),
            (std::vector<std::string>{"world size  passed  failed  skipped   seconds",
                                      "         1       1       2        2       2.5",
                                      "         2       1       1        0       1.0",
                                      "         4  not run: no MPI",
                                      "     total       2       3        2       3.5", ""}));
  EXPECT_EQ(text.back(), "2 passed, 3 failed, 2 skipped at world size(s) 1, 2; not run at 4");
  EXPECT_EQ(testsuites_line(merged_junit(sizes)),
            "<testsuites name=\"rcts\" tests=\"8\" failures=\"1\" errors=\"2\" skipped=\"3\" time=\"3.500\">");
  const json j = merged_json(sizes);
  EXPECT_EQ(j["summary"], json({{"total", 7}, {"passed", 2}, {"failed", 1}, {"skipped", 1}, {"xfail", 1}, {"errors", 2}}));
  EXPECT_EQ(j["world_sizes"][0]["summary"],
            json({{"total", 5}, {"passed", 1}, {"failed", 1}, {"skipped", 1}, {"xfail", 1}, {"errors", 1}}));
  EXPECT_EQ(j["world_sizes"][1]["summary"],
            json({{"total", 2}, {"passed", 1}, {"failed", 0}, {"skipped", 0}, {"xfail", 0}, {"errors", 1}}));
  EXPECT_EQ(j["world_sizes"][2], json({{"ranks", 4}, {"status", "skipped"}, {"reason", "no MPI"}}));
  EXPECT_EQ(merged_exit_status(sizes), 1);
}

TEST(MergeReports, ExitStatusTable) {
  using S = WorldSizeResults::Status;
  const std::vector<std::pair<std::vector<WorldSizeResults>, int>> table = {
      {{size_of(1, {result("p", Outcome::pass)}), size_of(2, {result("p", Outcome::pass)})}, 0},
      {{size_of(1, {result("p", Outcome::pass)}), size_of(2, {result("e", Outcome::error)})}, 1},  // only an error
      {{size_of(1, {result("e", Outcome::error)})}, 1},
      {{size_of(1, {result("f", Outcome::fail, {"rng"})})}, 1},
      {{size_of(1, {result("x", Outcome::xfail, {"rng"}), result("s", Outcome::skip), result("p", Outcome::pass)})}, 0},
      {{size_of(1, {result("p", Outcome::pass)}), not_run(2, S::skipped)}, 0},
      {{size_of(1, {result("p", Outcome::pass)}), not_run(2, S::missing)}, 1},
      {{size_of(1, {})}, 1},
      {{not_run(2, S::skipped)}, 1},
  };
  for (size_t i = 0; i < table.size(); ++i) EXPECT_EQ(merged_exit_status(table[i].first), table[i].second) << "row " << i;
}

// The merged counts are the counts taken from the cases, at every world size.
TEST(MergeReports, TotalsEqualTheCasesThemselves) {
  const std::vector<Outcome> all = {Outcome::pass, Outcome::fail, Outcome::skip, Outcome::xfail, Outcome::error};
  for (size_t mask = 1; mask < 32; ++mask) {
    std::vector<CaseResult> np1, np2;
    std::map<Outcome, int> n;
    for (size_t k = 0; k < all.size(); ++k) {
      if (!(mask & (1u << k))) continue;
      np1.push_back(result("a" + std::to_string(k), all[k], all[k] == Outcome::fail ? std::vector<std::string>{"rng"}
                                                                                     : std::vector<std::string>{}));
      ++n[all[k]];
      if (k % 2 == 0) {
        np2.push_back(result("b" + std::to_string(k), all[k]));
        ++n[all[k]];
      }
    }
    const std::vector<WorldSizeResults> sizes = {size_of(1, np1), size_of(2, np2)};
    const int total = static_cast<int>(np1.size() + np2.size());
    EXPECT_EQ(testsuites_line(merged_junit(sizes)),
              "<testsuites name=\"rcts\" tests=\"" + std::to_string(total) + "\" failures=\"" +
                  std::to_string(n[Outcome::fail]) + "\" errors=\"" + std::to_string(n[Outcome::error]) + "\" skipped=\"" +
                  std::to_string(n[Outcome::skip] + n[Outcome::xfail]) + "\" time=\"" +
                  (total % 2 ? std::to_string(total / 2) + ".500" : std::to_string(total / 2) + ".000") + "\">")
        << mask;
    const json s = merged_json(sizes)["summary"];
    EXPECT_EQ(s["failed"], n[Outcome::fail]);
    EXPECT_EQ(s["errors"], n[Outcome::error]);
    EXPECT_EQ(s["xfail"], n[Outcome::xfail]);
    EXPECT_EQ(merged_exit_status(sizes), n[Outcome::fail] + n[Outcome::error] > 0 ? 1 : 0) << mask;
  }
}

}  // namespace
}  // namespace rcts::harness
