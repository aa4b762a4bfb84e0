// Result writers: summary table, progress line, JSON counts, JUnit XML escaping.
#include "harness/reports/report.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "reference/core/error.hpp"

namespace rcts::harness {
namespace {

RunHeader header() { return {"0.1.0", "3b5ca22", "cpu", 2, 1234, "2024-06-01T12:00:00Z"}; }

std::vector<CaseResult> cases() {
  return {
      {"selective.core_attn.bf16", "cases/selective.json", Outcome::pass, "", 0.12, {{"bitwise", Outcome::pass, ""}}, ""},
      {"full.tp2", "cases/full.json", Outcome::fail, "", 1.5,
       {{"bitwise", Outcome::pass, ""}, {"rng", Outcome::fail, "dropout mask <differs> at [0, 3]\nsecond line"}}, ""},
      {"offload.cuda", "cases/offload.json", Outcome::skip, "needs backend \"cuda\" & 2 GPUs", 0.0, {}, "cuda"},
      {"uniform.tail", "cases/uniform.json", Outcome::xfail, "a known upstream bug", 0.3, {}, ""},
      {"config.bad", "cases/bad.json", Outcome::error, "threw: key 'x' unknown", 0.01, {}, ""},
  };
}

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') + 1);
}

size_t count(const std::string& s, const std::string& part) {
  size_t n = 0;
  for (auto p = s.find(part); p != std::string::npos; p = s.find(part, p + 1)) ++n;
  return n;
}

TEST(SummaryTable, LastLineCountsErrorsAsFailedAndXfailAsSkipped) {
  const std::string t = summary_table(header(), cases());
  EXPECT_EQ(last_line(t), "1 passed, 2 failed, 2 skipped") << t;
  EXPECT_TRUE(std::regex_match(last_line(t), std::regex(R"(\d+ passed, \d+ failed, \d+ skipped)")));
  EXPECT_NE(t.find("git sha   3b5ca22"), std::string::npos) << t;
  EXPECT_NE(t.find("backend   cpu"), std::string::npos) << t;
  EXPECT_NE(t.find("ranks     2"), std::string::npos) << t;
  EXPECT_NE(t.find("version   0.1.0"), std::string::npos) << t;
  EXPECT_NE(t.find("rng: dropout mask <differs> at [0, 3]"), std::string::npos) << t;
  EXPECT_EQ(t.find("second line"), std::string::npos) << t;
}

TEST(SummaryTable, RowsAreAligned) {
  const std::string t = summary_table(header(), cases());
  std::istringstream in(t);
  std::string line;
  std::vector<size_t> outcome_cols;
  for (const char* label : {"PASS ", "FAIL ", "SKIP ", "XFAIL", "ERROR"}) {
    const auto p = t.find(std::string("  ") + label);
    ASSERT_NE(p, std::string::npos) << label;
    outcome_cols.push_back(p - t.rfind('\n', p) - 1);
  }
  for (size_t c : outcome_cols) EXPECT_EQ(c, outcome_cols[0]) << t;
}

TEST(SummaryTable, AllPassingAndEmpty) {
  EXPECT_EQ(last_line(summary_table(header(), {})), "0 passed, 0 failed, 0 skipped");
  std::vector<CaseResult> one{{"a.b", "f", Outcome::pass, "", 0.5, {}, "cpu"}};
  EXPECT_EQ(last_line(summary_table(header(), one)), "1 passed, 0 failed, 0 skipped");
}

TEST(ProgressLine, NamesABackendOtherThanTheReference) {
  CaseResult c{"selective.core_attn.bf16", "f", Outcome::pass, "", 0.12, {}, "cuda"};
  EXPECT_EQ(progress_line(1, 2, c), "[1/2] PASS selective.core_attn.bf16 [cuda] (0.12 s)");
  EXPECT_EQ(results_json(header(), {c})["cases"][0]["backend"], "cuda");
  EXPECT_NE(junit_xml(header(), {c}).find("name=\"selective.core_attn.bf16 [cuda, np2]\""), std::string::npos);
}

TEST(ProgressLine, Format) {
  CaseResult c{"selective.core_attn.bf16", "f", Outcome::pass, "", 0.12, {}, "cpu"};
  EXPECT_EQ(progress_line(3, 41, c), "[ 3/41] PASS selective.core_attn.bf16 (0.12 s)");
  EXPECT_EQ(progress_line(41, 41, c), "[41/41] PASS selective.core_attn.bf16 (0.12 s)");
  c.outcome = Outcome::skip;
  c.reason = "needs 2 ranks";
  EXPECT_EQ(progress_line(7, 9, c), "[7/9] SKIP selective.core_attn.bf16 (0.12 s): needs 2 ranks");
}

TEST(ResultsJson, CountsAndCases) {
  const nlohmann::json j = results_json(header(), cases());
  EXPECT_EQ(j.at("header").at("git_sha"), "3b5ca22");
  EXPECT_EQ(j.at("header").at("seed"), 1234);
  const auto& s = j.at("summary");
  EXPECT_EQ(s.at("total"), 5);
  EXPECT_EQ(s.at("passed"), 1);
  EXPECT_EQ(s.at("failed"), 1);
  EXPECT_EQ(s.at("skipped"), 1);
  EXPECT_EQ(s.at("xfail"), 1);
  EXPECT_EQ(s.at("errors"), 1);
  EXPECT_EQ(j.at("cases")[1].at("outcome"), "fail");
  EXPECT_EQ(j.at("cases")[1].at("checks")[1].at("kind"), "rng");
}

TEST(JunitXml, CountsAndElements) {
  const std::string x = junit_xml(header(), cases());
  EXPECT_EQ(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites ", 0), 0u) << x;
  EXPECT_NE(x.find("tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"2\""), std::string::npos) << x;
  EXPECT_EQ(count(x, "<testcase "), 5u);
  EXPECT_EQ(count(x, "<failure "), 1u);
  EXPECT_EQ(count(x, "<error "), 1u);
  EXPECT_EQ(count(x, "<skipped "), 2u);
  EXPECT_EQ(count(x, "<testsuite "), 1u);
  EXPECT_EQ(count(x, "</testsuite>"), 1u);
  EXPECT_EQ(count(x, "</testsuites>"), 1u);
  EXPECT_NE(x.find("classname=\"rcts.np2\" name=\"selective.core_attn.bf16 [cpu, np2]\""), std::string::npos) << x;
  EXPECT_NE(x.find("<testsuite name=\"rcts.np2\" "), std::string::npos) << x;
  EXPECT_NE(x.find("<property name=\"backend\" value=\"cpu\"/>"), std::string::npos) << x;
}

// CI merges the reports of one case set at 1, 2 and 4 ranks (and per backend): no two
// testcases of such reports may share (classname, name).
TEST(JunitXml, ReportsAtSeveralWorldSizesAndBackendsDoNotCollide) {
  std::set<std::pair<std::string, std::string>> seen;
  size_t total = 0;
  const std::regex testcase(R"re(<testcase classname="([^"]*)" name="([^"]*)")re");
  for (int ranks : {1, 2, 4}) {
    RunHeader h = header();
    h.ranks = ranks;
    std::vector<CaseResult> cs = cases();
    CaseResult other_backend = cs[0];
    other_backend.backend = "cpu-exact";
    cs.push_back(other_backend);
    const std::string x = junit_xml(h, cs);
    EXPECT_NE(x.find("<testsuite name=\"rcts.np" + std::to_string(ranks) + "\""), std::string::npos) << x;
    for (std::sregex_iterator it(x.begin(), x.end(), testcase), end; it != end; ++it) {
      ++total;
      EXPECT_TRUE(seen.insert({(*it)[1], (*it)[2]}).second) << (*it)[1] << " / " << (*it)[2];
      // The full id, not its last component.
      EXPECT_EQ((*it)[2].str().find(' '), (*it)[2].str().find(" ["));
    }
  }
  EXPECT_EQ(total, 18u);
}

TEST(ResultsJson, SchemaVersionAndTimingApart) {
  const nlohmann::json j = results_json(header(), cases());
  EXPECT_EQ(j.at("schema"), "rcts-results");
  EXPECT_EQ(j.at("schema_version"), 1);
  // Wall-clock values live under "timing" only.
  EXPECT_FALSE(j.at("header").contains("started_at"));
  for (const auto& c : j.at("cases")) EXPECT_FALSE(c.contains("seconds")) << c;
  EXPECT_EQ(j.at("timing").at("started_at"), "2024-06-01T12:00:00Z");
  EXPECT_EQ(j.at("timing").at("cases").size(), 5u);
  EXPECT_EQ(j.at("timing").at("cases")[1].at("id"), "full.tp2");
  EXPECT_DOUBLE_EQ(j.at("timing").at("cases")[1].at("seconds").get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j.at("timing").at("total_seconds").get<double>(), 0.12 + 1.5 + 0.3 + 0.01);
  // Two runs that differ only in their times give the same document outside "timing".
  RunHeader later = header();
  later.started_at = "2030-01-01T00:00:00Z";
  auto slower = cases();
  for (auto& c : slower) c.seconds *= 3;
  nlohmann::json a = j, b = results_json(later, slower);
  EXPECT_NE(a, b);
  a.erase("timing");
  b.erase("timing");
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(JunitXml, EscapesText) {
  const std::string x = junit_xml(header(), cases());
  EXPECT_NE(x.find("needs backend &quot;cuda&quot; &amp; 2 GPUs"), std::string::npos) << x;
  EXPECT_NE(x.find("message=\"rng: dropout mask &lt;differs&gt; at [0, 3]\""), std::string::npos) << x;
  EXPECT_NE(x.find(">[fail] rng: dropout mask &lt;differs&gt; at [0, 3]\nsecond line\n</failure>"), std::string::npos) << x;
  EXPECT_NE(x.find("key &apos;x&apos; unknown"), std::string::npos) << x;
  EXPECT_EQ(x.find("<differs>"), std::string::npos) << x;
  EXPECT_EQ(x.find("\"cuda\" &"), std::string::npos) << x;
}

TEST(XmlEscape, ControlCharacters) {
  EXPECT_EQ(xml_escape("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  EXPECT_EQ(xml_escape(std::string("x\x01y\ty", 5)), "x\\x01y&#9;y");
  EXPECT_EQ(xml_escape("plain utf-8 \xc3\xa9"), "plain utf-8 \xc3\xa9");
  EXPECT_EQ(xml_escape("a\nb", /*attribute=*/true), "a&#10;b");
  EXPECT_EQ(xml_escape("a\nb<", /*attribute=*/false), "a\nb&lt;");
}

TEST(Outcome, NamesRoundTrip) {
  for (Outcome o : {Outcome::pass, Outcome::fail, Outcome::skip, Outcome::xfail, Outcome::error})
    EXPECT_EQ(parse_outcome(outcome_name(o)), o);
  EXPECT_THROW(parse_outcome("passed"), Error);
}

}  // namespace
}  // namespace rcts::harness
