// The verdicts the ranks of a multi-rank run reach from their exchanged records
// (agreement.hpp): a failure or a difference on any rank is named with that rank.
// The exchanges themselves run under mpiexec (tests/cases/trust_tests.cmake).
#include <gtest/gtest.h>

#include "harness/run/case_agreement.hpp"
#include "harness/run/runner.hpp"
#include "backends/registry.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

Case tiny_case() {
  Case c;
  c.id = "t.tiny";
  c.file = "cases/t/tiny.json";
  c.source_sha256 = "abc";
  c.config = {{"model", {{"num_layers", 2}}}};
  c.variants.push_back({"full", {{"recompute", {{"recompute_granularity", "full"}, {"recompute_method", "uniform"},
                                                {"recompute_num_layers", 1}}}}, {}});
  c.expect.bitwise = true;
  c.backends = {"cpu"};
  c.ranks = {1};
  return c;
}

// Options for a one-rank run on the CPU backend, which the tiny case lists.
struct CpuOptions {
  std::unique_ptr<Backend> backend = make_backend("cpu");
  RunOptions o;
  CpuOptions() { o.scope.backend = backend.get(); }
};

TEST(Agreement, StartNamesTheRankThatRunsAnotherCommand) {
  const json a{{"command", "rcts run"}, {"build", "0.1 (x)"}};
  json b = a;
  EXPECT_FALSE(start_verdict({a, b}));
  b["command"] = "rcts list";
  const auto v = start_verdict({a, a, b});
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("rank 2 runs 'rcts list'"), std::string::npos) << *v;
}

TEST(Agreement, LoadErrorsCarryTheFailingRanksMessages) {
  EXPECT_FALSE(load_verdict({json::object(), json::object()}));
  const auto v = load_verdict({json::object(), {{"error", "x.json: no such case file"}}});
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, "rank 1: x.json: no such case file");
}

TEST(Agreement, CaseListsMustHoldTheSameIds) {
  const json a{{"cases", {"a", "b"}}};
  EXPECT_FALSE(case_list_verdict({a, a}));
  const auto v = case_list_verdict({a, {{"cases", {"a", "c"}}}});
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("only on rank 0: b"), std::string::npos) << *v;
  EXPECT_NE(v->find("only on rank 1: c"), std::string::npos) << *v;
  EXPECT_TRUE(case_list_verdict({a, {{"cases", {"b", "a"}}}}));  // the order matters: cases run in lockstep
}

TEST(Agreement, IdenticalCasesAgreeWhereverTheirFilesLie) {
  const Case c = tiny_case();
  CpuOptions opts;
  RunOptions& o = opts.o;
  const json a = case_record(c, o);
  ASSERT_TRUE(a.contains("configs")) << a.dump();
  EXPECT_EQ(a["configs"].size(), 2u);  // baseline and the variant, resolved
  json b = a;
  b["file"] = "/elsewhere/tiny.json";
  EXPECT_FALSE(case_verdict({a, b}));
}

TEST(Agreement, ADifferentConfigIsNamedByItsPathAndBothValues) {
  const Case c = tiny_case();
  Case other = c;
  other.config["model"]["num_layers"] = 3;
  CpuOptions opts;
  RunOptions& o = opts.o;
  const auto v = case_verdict({case_record(c, o), case_record(other, o)});
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("/configs/baseline/model/num_layers: 2 on rank 0, 3 on rank 1"), std::string::npos) << *v;
}

TEST(Agreement, AConfigThatDoesNotResolveOnOneRankFailsTheCase) {
  const Case c = tiny_case();
  Case bad = c;
  bad.variants[0].patch["recompute"]["recompute_num_layers"] = 5;  // more than the 2 layers
  CpuOptions opts;
  RunOptions& o = opts.o;
  const json rec = case_record(bad, o);
  ASSERT_TRUE(rec.contains("error")) << rec.dump();
  const auto v = case_verdict({case_record(c, o), rec});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rfind("rank 1: ", 0), 0u) << *v;
  EXPECT_NE(v->find("recompute_num_layers = 5"), std::string::npos) << *v;
}

TEST(Agreement, AnActiveMutantIsPartOfTheCase) {
  const Case c = tiny_case();
  CpuOptions opts;
  RunOptions& o = opts.o;
  json a = case_record(c, o), b = a;
  b["mutant"] = "no_rng_restore";
  const auto v = case_verdict({a, b});
  ASSERT_TRUE(v);
  EXPECT_NE(v->find("/mutant"), std::string::npos) << *v;
}

TEST(Agreement, ACaseSkippedAtThisWorldSizeIsNotResolved) {
  Case c = tiny_case();
  c.ranks = {2};
  c.variants[0].patch["recompute"]["recompute_num_layers"] = 5;  // would not resolve
  CpuOptions opts;  // one rank
  const RunOptions& o = opts.o;
  const json rec = case_record(c, o);
  EXPECT_FALSE(rec.contains("error")) << rec.dump();
  EXPECT_FALSE(rec.contains("configs")) << rec.dump();
}

}  // namespace
}  // namespace rcts::harness
