// One GoogleTest per case file (testing::RegisterTest), so `ctest -L conformance`
// runs the whole CPU case set and a failure names the case. Built twice: as
// rcts_conformance (every check) and, with RCTS_GOLDEN_ONLY, as rcts_golden (the
// baseline's golden digests only, for the cases that keep a golden file).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "backends/registry.hpp"
#include "harness/lib/runner.hpp"

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif
#ifndef RCTS_GOLDEN_ONLY
#define RCTS_GOLDEN_ONLY 0
#endif

namespace {

using namespace rcts::harness;

// The backend every registered test runs on: RCTS_BACKEND, else the reference.
rcts::Backend& backend() {
  static const std::unique_ptr<rcts::Backend> b = [] {
    const char* name = std::getenv("RCTS_BACKEND");
    return rcts::make_backend(name && *name ? name : "cpu");
  }();
  return *b;
}

class CaseTest : public ::testing::Test {
 public:
  explicit CaseTest(const Case* c) : case_(c) {}
  void TestBody() override {
    RunOptions o;
    o.backend = &backend();
    o.golden_dir = std::filesystem::path(RCTS_SOURCE_DIR) / "golden";
    o.golden_only = RCTS_GOLDEN_ONLY;
    const CaseResult r = run_case(*case_, o);
    for (const auto& ch : r.checks)
      std::cout << "  " << outcome_label(ch.outcome) << " " << ch.kind << ": " << ch.detail << "\n";
    switch (r.outcome) {
      case Outcome::pass:
      case Outcome::xfail:
        return;
      case Outcome::skip:
        GTEST_SKIP() << r.reason;
      default:
        FAIL() << case_->file.string() << ": " << r.reason;
    }
  }

 private:
  const Case* case_;
};

std::string test_name(std::string id) {
  for (auto& ch : id)
    if (ch == '.' || ch == '-') ch = '_';
  return id;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  static std::vector<Case> cases;
  try {
    cases = load_cases({std::filesystem::path(RCTS_SOURCE_DIR) / "cases"});
  } catch (const std::exception& e) {
    std::cerr << "cannot load the case set: " << e.what() << "\n";
    return 2;
  }
  for (const auto& c : cases) {
    if (RCTS_GOLDEN_ONLY && !c.expect.golden) continue;
    // Multi-rank cases run under mpiexec (label mpi), one CTest per world size.
    if (std::find(c.ranks.begin(), c.ranks.end(), 1) == c.ranks.end()) continue;
    const std::string suite = c.id.substr(0, c.id.find('.'));
    ::testing::RegisterTest(suite.c_str(), test_name(c.id).c_str(), nullptr, nullptr, c.file.string().c_str(), 1,
                            [&c]() -> ::testing::Test* { return new CaseTest(&c); });
  }
  return RUN_ALL_TESTS();
}
