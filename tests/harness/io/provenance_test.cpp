// Run-time git provenance: the sha of the commit a work tree stands at now, "-dirty"
// after a local edit of a tracked file, nothing for a directory that is not the top of
// a work tree. Expected values come from git itself, run by the test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "harness/io/provenance.hpp"
#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

// A throwaway identity and no global config: the test must not depend on the user's.
const std::string kGit = "env GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent git -c user.name=t -c user.email=t@t ";

std::string sh(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

class GitRepo : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "git is not installed";
    dir_ = scratch_.path() / "repo";
    fs::create_directories(dir_);
    git("init -q");
    write(dir_ / "a.txt", "one\n");
    git("add a.txt");
    git("commit -q -m one");
  }
  void git(const std::string& args) {
    ASSERT_EQ(std::system((kGit + "-C '" + dir_.string() + "' " + args + " >/dev/null").c_str()), 0) << args;
  }
  std::string head() { return sh(kGit + "-C '" + dir_.string() + "' rev-parse HEAD").substr(0, 12); }

  ScratchDir scratch_;
  fs::path dir_;
};

TEST_F(GitRepo, CleanTreeGivesHeadWithoutDirtyMark) {
  const auto s = read_git_state(dir_);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->sha, head());
  EXPECT_EQ(s->sha.size(), 12u);
  EXPECT_FALSE(s->dirty);
  EXPECT_EQ(s->str(), head());
}

TEST_F(GitRepo, LocalEditOfTrackedFileIsDirty) {
  write(dir_ / "a.txt", "two\n");
  const auto s = read_git_state(dir_);
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->dirty);
  EXPECT_EQ(s->str(), head() + "-dirty");
}

TEST_F(GitRepo, UntrackedFileIsNotDirty) {
  write(dir_ / "new.txt", "x\n");
  const auto s = read_git_state(dir_);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->dirty);
}

TEST_F(GitRepo, NewCommitIsSeenWithoutReconfiguring) {
  const std::string first = read_git_state(dir_)->sha;
  write(dir_ / "a.txt", "three\n");
  git("commit -q -am three");
  const auto s = read_git_state(dir_);
  ASSERT_TRUE(s.has_value());
  EXPECT_NE(s->sha, first);
  EXPECT_EQ(s->sha, head());
  EXPECT_FALSE(s->dirty);
}

TEST_F(GitRepo, SubdirectoryOfAnotherRepositoryIsNotItsSourceTree) {
  fs::create_directories(dir_ / "unpacked");
  EXPECT_FALSE(read_git_state(dir_ / "unpacked").has_value());
}

TEST(GitState, NoRepositoryGivesNothing) {
  ScratchDir scratch;
  EXPECT_FALSE(read_git_state(scratch.path()).has_value());
  EXPECT_FALSE(read_git_state("").has_value());
  EXPECT_FALSE(read_git_state(scratch.path() / "missing").has_value());
}

}  // namespace
}  // namespace rcts::harness
