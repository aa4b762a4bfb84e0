// Every rank of a job runs the same rcts build: the start record names the version, the
// commit and the sha256 of the executable, and the start verdict refuses any difference
// naming both ranks' values (the exchange itself runs under mpiexec:
// tests/cases/mpi_other_build.cmake).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>

#include <unistd.h>

#include "harness/io/digest.hpp"
#include "harness/io/version.hpp"
#include "harness/ranks/agreement.hpp"

namespace rcts::harness {
namespace {

using nlohmann::json;

TEST(RankBuilds, TheStartRecordNamesThisBuildAndItsExecutable) {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  const std::string exe{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_FALSE(exe.empty());
  const json r = start_record("rcts run");
  EXPECT_EQ(r.at("command"), "rcts run");
  EXPECT_EQ(r.at("build"), std::string(kVersion) + " (" + kGitSha + ")");
  EXPECT_EQ(r.at("executable"), sha256_hex(exe.data(), exe.size()));
  EXPECT_EQ(r.at("pid"), static_cast<long>(::getpid()));
}

TEST(RankBuilds, StartVerdictRefusesEveryDifferenceNamingTheRanks) {
  const json a{{"command", "run"}, {"build", "0.1 (aaa)"}, {"executable", "e0"}};
  auto with = [&](const char* key, const char* value) {
    json b = a;
    b[key] = value;
    return b;
  };
  struct Row {
    std::string label;
    std::vector<json> ranks;
    std::optional<std::string> verdict;
  };
  const std::vector<Row> rows = {
      {"one build", {a, a, a}, std::nullopt},
      {"another commit on rank 1", {a, with("build", "0.1 (bbb)")},
       "the ranks run different rcts builds: rank 0 runs '0.1 (aaa)', rank 1 runs '0.1 (bbb)' (every rank of a job "
       "must run the same one)"},
      {"another executable of the same commit on rank 2", {a, a, with("executable", "e2")},
       "the ranks run different rcts builds (sha256 of the executable): rank 0 runs 'e0', rank 2 runs 'e2' (every "
       "rank of a job must run the same one)"},
      {"two ranks with other executables", {a, with("executable", "e1"), with("executable", "e2")},
       "the ranks run different rcts builds (sha256 of the executable): rank 0 runs 'e0', rank 1 runs 'e1'; rank 0 "
       "runs 'e0', rank 2 runs 'e2' (every rank of a job must run the same one)"},
      {"another command", {a, with("command", "list")},
       "the ranks run different commands: rank 0 runs 'run', rank 1 runs 'list' (every rank of a job must run the "
       "same one)"},
  };
  for (const auto& row : rows) EXPECT_EQ(start_verdict(row.ranks), row.verdict) << row.label;
}

}  // namespace
}  // namespace rcts::harness
