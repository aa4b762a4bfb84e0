// The rule that keeps a command's outputs off its inputs and off each other (cli/path_uses.hpp).
#include "harness/cli/path_uses.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "reference/core/error.hpp"

namespace rcts::harness::cli {
namespace {

namespace fs = std::filesystem;
using K = PathUse::Kind;

class PathUses : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rcts_path_uses_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cases");
    std::ofstream(dir_ / "cases" / "c.json") << "{}";
    fs::create_symlink(dir_ / "cases" / "c.json", dir_ / "link.json");
    fs::create_hard_link(dir_ / "cases" / "c.json", dir_ / "hard.json");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& rel) const { return (dir_ / rel).string(); }
  // The message refuse_path_clashes gives, or "" when it accepts.
  static std::string verdict(const std::vector<PathUse>& uses) {
    try {
      refuse_path_clashes(uses);
      return "";
    } catch (const Error& e) {
      return e.message();
    }
  }
  fs::path dir_;
};

TEST_F(PathUses, AnOutputIsNoInput) {
  const PathUse in{K::input, "case path", p("cases/c.json")};
  EXPECT_EQ(verdict({in, {K::output, "--json", p("cases/c.json")}}),
            "--json " + p("cases/c.json") + ": it is also the input case path " + p("cases/c.json") + " (" +
                p("cases/c.json") + "): refusing to overwrite an input; name another output");
  EXPECT_NE(verdict({in, {K::output, "--json", p("link.json")}}), "");  // through a symlink
  EXPECT_NE(verdict({in, {K::output, "--json", p("hard.json")}}), "");  // a hard link: the same inode
  EXPECT_NE(verdict({in, {K::output, "--json", p("cases/../cases/./c.json")}}), "");
  EXPECT_EQ(verdict({in, {K::output, "--json", p("r.json")}}), "");
}

TEST_F(PathUses, OutputsAreDistinct) {
  EXPECT_EQ(verdict({{K::output, "--json", p("x.json")}, {K::output, "--junit", p("sub/../x.json")}}),
            "--json " + p("x.json") + " and --junit " + p("sub/../x.json") + " are the same file (" + p("x.json") +
                "): each output needs a path of its own");
  EXPECT_EQ(verdict({{K::output, "--json", "/dev/null"}, {K::output, "--junit", "/dev/null"}}), "");
  EXPECT_EQ(verdict({{K::output, "--json", ""}, {K::output, "--junit", ""}}), "");  // not given
}

TEST_F(PathUses, DirectoriesHoldNoClash) {
  const PathUse cases{K::input, "case path", p("cases")};
  EXPECT_NE(verdict({cases, {K::output, "--json", p("cases/r.json")}}), "");  // inside an input directory
  EXPECT_NE(verdict({cases, {K::output_dir, "--dump", p("cases/d")}}), "");
  EXPECT_NE(verdict({cases, {K::output_dir, "--dump", dir_.string()}}), "");  // holds the cases
  EXPECT_NE(verdict({{K::output_dir, "--dump", p("d")}, {K::output_dir, "--report", p("d/r")}}), "");
  EXPECT_EQ(verdict({cases, {K::output_dir, "--dump", p("d")}, {K::output, "--json", p("d/r.json")}}), "");
}

}  // namespace
}  // namespace rcts::harness::cli
