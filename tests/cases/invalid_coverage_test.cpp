// The invalid-config case set (cases/invalid) covers the validator: every rule code
// all_rule_codes() lists is the expected config_error of at least one case, every
// case there expects a known rule code, is named after it, and is rejected with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "harness/cases/case.hpp"
#include "reference/config/config_error.hpp"
#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace {

using rcts::harness::Case;

const std::filesystem::path kInvalidDir = std::filesystem::path(RCTS_SOURCE_DIR) / "cases" / "invalid";

const std::vector<Case>& invalid_cases() {
  static const std::vector<Case> cases = rcts::harness::load_cases({kInvalidDir});
  return cases;
}

bool is_rule_code(const std::string& code) {
  const auto all = rcts::all_rule_codes();
  return std::find(all.begin(), all.end(), code) != all.end();
}

TEST(InvalidCases, EveryCaseExpectsAKnownRuleCode) {
  ASSERT_FALSE(invalid_cases().empty()) << "no cases under " << kInvalidDir;
  for (const Case& c : invalid_cases()) {
    SCOPED_TRACE(c.file.string());
    ASSERT_TRUE(c.expect.config_error.has_value()) << c.id << ": a case under cases/invalid must expect a config_error";
    EXPECT_TRUE(is_rule_code(*c.expect.config_error))
        << c.id << ": '" << *c.expect.config_error << "' is not in all_rule_codes()";
  }
}

TEST(InvalidCases, EveryRuleCodeHasACase) {
  std::set<std::string> covered;
  for (const Case& c : invalid_cases())
    if (c.expect.config_error) covered.insert(*c.expect.config_error);
  for (const auto& code : rcts::all_rule_codes())
    EXPECT_TRUE(covered.count(code)) << "no case under cases/invalid expects rule " << code
                                     << " (add cases/invalid/" << code << ".json)";
}

// cases/invalid/<code>[.<variant>].json with id "invalid.<file stem>".
TEST(InvalidCases, FileAndIdAreNamedAfterTheCode) {
  for (const Case& c : invalid_cases()) {
    if (!c.expect.config_error) continue;
    const std::string& code = *c.expect.config_error;
    const std::string stem = c.file.stem().string();
    EXPECT_TRUE(stem == code || stem.rfind(code + ".", 0) == 0) << c.file << " does not start with its code " << code;
    EXPECT_EQ(c.id, "invalid." + stem) << c.file;
  }
}

TEST(InvalidCases, EachConfigIsRejectedWithItsCode) {
  for (const Case& c : invalid_cases()) {
    if (!c.expect.config_error) continue;
    SCOPED_TRACE(c.id);
    std::vector<std::string> got;
    try {
      const rcts::Config cfg = rcts::config_from_json(c.config, c.file.string());
      for (const auto& issue : rcts::validate(cfg)) got.push_back(issue.code);
    } catch (const rcts::ConfigError& e) {
      got.push_back(e.code());
    }
    std::string list;
    for (const auto& g : got) list += (list.empty() ? "" : ", ") + g;
    EXPECT_NE(std::find(got.begin(), got.end(), *c.expect.config_error), got.end())
        << "expected " << *c.expect.config_error << ", got: " << (got.empty() ? "no error" : list);
  }
}

}  // namespace
