// The registry of check kinds is the one list: case parsing accepts exactly its names
// (and keeps case-level kinds out of variants), and the docs describe exactly its kinds
// (README.md's check table and cases/README.md's expectation sections).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "harness/checks/check_kinds.hpp"
#include "reference/core/error.hpp"

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace rcts::harness {
namespace {

std::string read(const std::string& rel) {
  std::ifstream in(std::string(RCTS_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> registry() {
  const auto names = check_kind_names();
  return {names.begin(), names.end()};
}

TEST(CheckKinds, TheDocsTableListsExactlyTheRegisteredKinds) {
  // The table moved from README.md to docs/checks.md with the README rewrite.
  const std::string readme = read("docs/checks.md");
  const std::regex row(R"(\n\| `([a-z_]+)` \| )");
  std::set<std::string> listed;
  // The check table is the one whose header is "| check | what it asserts |".
  const auto start = readme.find("| check | what it asserts |");
  ASSERT_NE(start, std::string::npos);
  const auto end = readme.find("\n\n", start);
  const std::string table = readme.substr(start, end - start);
  for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it)
    listed.insert((*it)[1]);
  EXPECT_EQ(listed, registry());
}

// docs/dump-format.md's "Which checks need what" names every kind that judges runs
// (config_error is judged on the config alone, so `rcts check` does not run it).
TEST(CheckKinds, TheDumpFormatsNeedsTableListsEveryKindThatJudgesRuns) {
  const std::string doc = read("docs/dump-format.md");
  const auto start = doc.find("| check | needs | without it |");
  ASSERT_NE(start, std::string::npos);
  const auto end = doc.find("\n\n", start);
  const std::string table = doc.substr(start, end - start);
  const std::regex row(R"(\n\| `([a-z_]+)` \| )");
  std::set<std::string> listed, judging;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), row); it != std::sregex_iterator(); ++it)
    listed.insert((*it)[1]);
  for (const auto& k : check_kinds())
    if (!k.runs_without_execution) judging.insert(std::string(k.name));
  EXPECT_EQ(listed, judging);
  // A row that says the check skips without its evidence names a kind with that rule.
  const std::regex skips(R"(\n\| `([a-z_]+)` \|[^\n]*\|[^|\n]*skip[^|\n]*\|)");
  int n = 0;
  for (auto it = std::sregex_iterator(table.begin(), table.end(), skips); it != std::sregex_iterator(); ++it, ++n) {
    const CheckKind* k = find_check_kind((*it)[1].str());
    ASSERT_NE(k, nullptr) << (*it)[1];
    EXPECT_NE(k->not_applicable, nullptr) << (*it)[1] << " skips in docs/dump-format.md but has no rule for it";
  }
  EXPECT_GE(n, 5);
}

TEST(CheckKinds, CasesReadmeDescribesEveryKind) {
  const std::string doc = read("cases/README.md");
  for (const auto& name : registry())
    EXPECT_NE(doc.find("**" + name + "**"), std::string::npos) << "cases/README.md has no section **" << name << "**";
}

TEST(CheckKinds, ParsingAcceptsTheRegistryAndKeepsCaseLevelKindsOutOfVariants) {
  const nlohmann::json all = {{"bitwise", true}, {"masks", true}, {"rng", true}, {"golden", true},
                              {"offload", true}, {"masks_across_ranks", true},
                              {"memory", {{"analytic", true}}}, {"counts", {{"layers.*", {{"original", 1}, {"recompute", 0}}}}}};
  const Expect e = parse_expectations(JsonReader("case.json", all, "/expect"), false);
  EXPECT_TRUE(e.bitwise && e.masks && e.rng && e.golden && e.offload && e.masks_across_ranks);
  EXPECT_EQ(requested_kinds(e).size(), 8u);
  const nlohmann::json unknown = {{"bitwsie", true}};
  EXPECT_THROW(parse_expectations(JsonReader("case.json", unknown, "/expect"), false), Error);
  for (const auto& k : check_kinds()) {
    if (!k.case_level_only()) continue;
    const nlohmann::json one = {{std::string(k.name), k.name == "config_error" ? nlohmann::json("x") : nlohmann::json(true)}};
    EXPECT_NO_THROW(parse_expectations(JsonReader("case.json", one, "/expect"), false)) << k.name;
    EXPECT_THROW(parse_expectations(JsonReader("case.json", one, "/variants/0/expect"), true), Error) << k.name;
  }
}

TEST(CheckKinds, EveryKindCanRunSomewhere) {
  for (const auto& k : check_kinds()) {
    EXPECT_FALSE(k.summary.empty()) << k.name;
    EXPECT_TRUE(k.on_baseline || k.on_variant || k.on_case_end) << k.name << " has no pass";
  }
}

}  // namespace
}  // namespace rcts::harness
