// A run must check something: a filter that matches no case, no cases at all, or an
// unknown mutant name is an error saying so, not "0 passed".
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "harness/run/runner.hpp"

namespace rcts::harness {
namespace {

std::vector<Case> two_cases() {
  std::vector<Case> cases(2);
  cases[0].id = "full.uniform.bf16";
  cases[1].id = "selective.core_attn.bf16";
  return cases;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

TEST(CaseSelection, FilterSelectsMatchingIds) {
  const auto cases = two_cases();
  EXPECT_EQ(select_cases(cases, "").size(), 2u);
  ASSERT_EQ(select_cases(cases, "selective.*").size(), 1u);
  EXPECT_EQ(select_cases(cases, "selective.*")[0]->id, "selective.core_attn.bf16");
}

TEST(CaseSelection, NoMatchIsAnErrorSayingWhy) {
  const auto cases = two_cases();
  EXPECT_EQ(error_of([&] { select_cases(cases, "selectve.*"); }),
            "no case matches --filter 'selectve.*' (2 cases loaded; `rcts list` shows their ids)");
  EXPECT_EQ(error_of([&] { select_cases({}, ""); }), "no cases to run");
}

TEST(CaseSelection, RunAndMutantsRefuseAnEmptySelection) {
  const auto cases = two_cases();
  RunOptions o;
  o.scope.filter = "typo";
  std::ostringstream out;
  EXPECT_NE(error_of([&] { run_cases(cases, o, &out); }).find("no case matches --filter 'typo'"), std::string::npos);
  EXPECT_NE(error_of([&] { run_mutants(cases, o, false, {}, out); }).find("no case matches --filter 'typo'"),
            std::string::npos);
  o.scope.filter.clear();
  EXPECT_EQ(error_of([&] { run_mutants(cases, o, false, {"no_such_mutant"}, out); }),
            "no mutant named 'no_such_mutant' (`rcts mutants --list` names them)");
}

}  // namespace
}  // namespace rcts::harness
