// AtomicFile: the whole new file or the old one, and every failure names the path and
// the OS error.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "harness/io/atomic_file.hpp"
#include "reference/core/error.hpp"
#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The names in dir, hidden ones included.
std::vector<std::string> names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The message of the rcts::Error that f throws; fails the test when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no rcts::Error thrown";
  return "";
}

struct FailWrite {
  explicit FailWrite(const char* match) { ::setenv("RCTS_TEST_FAIL_WRITE", match, 1); }
  ~FailWrite() { ::unsetenv("RCTS_TEST_FAIL_WRITE"); }
};

TEST(AtomicFile, ReplacesTheWholeFileAndLeavesNothingBeside) {
  ScratchDir dir;
  const fs::path p = dir.path() / "r.json";
  write_file_atomic(p, "old content that is longer\n");
  write_file_atomic(p, "new\n", /*durable=*/true);
  EXPECT_EQ(slurp(p), "new\n");
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{"r.json"});
}

TEST(AtomicFile, KeepsTheModeOfTheFileItReplaces) {
  ScratchDir dir;
  const fs::path p = dir.path() / "x";
  write_file_atomic(p, "a");
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  write_file_atomic(p, "b");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicFile, FullDeviceFailsWithTheOsError) {
  const std::string msg = error_of([] { write_file_atomic("/dev/full", "x"); });
  EXPECT_NE(msg.find("/dev/full"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOSPC)), std::string::npos) << msg;
}

TEST(AtomicFile, DevicesThatAcceptBytesAreWrittenInPlace) {
  EXPECT_NO_THROW(write_file_atomic("/dev/null", "x"));
}

TEST(AtomicFile, UnwritableDirectoriesFailWithThePath) {
  ScratchDir dir;
  write_file_atomic(dir.path() / "file", "x");
  std::string msg = error_of([&] { write_file_atomic(dir.path() / "file" / "r.json", "x"); });
  EXPECT_NE(msg.find("file/r.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOTDIR)), std::string::npos) << msg;
  msg = error_of([&] { write_file_atomic(dir.path() / "missing" / "r.json", "x"); });
  EXPECT_NE(msg.find(std::strerror(ENOENT)), std::string::npos) << msg;
  msg = error_of([&] { write_file_atomic(dir.path(), "x"); });
  EXPECT_NE(msg.find("directory"), std::string::npos) << msg;
}

TEST(AtomicFile, FailureHalfWayKeepsTheOldFile) {
  ScratchDir dir;
  const fs::path p = dir.path() / "golden.json";
  write_file_atomic(p, "previous\n");
  {
    FailWrite hook("golden.json");
    const std::string msg = error_of([&] { write_file_atomic(p, std::string(4096, 'n')); });
    EXPECT_NE(msg.find(std::strerror(ENOSPC)), std::string::npos) << msg;
  }
  EXPECT_EQ(slurp(p), "previous\n");
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{"golden.json"});
}

TEST(AtomicFile, UncommittedWritesLeaveNoTrace) {
  ScratchDir dir;
  {
    AtomicFile f(dir.path() / "a");
    f.write("half");
    f.close();  // checked and closed, but never renamed into place
  }
  EXPECT_TRUE(names(dir.path()).empty());
}

TEST(AtomicFile, WritesThroughSymlinks) {
  ScratchDir dir;
  write_file_atomic(dir.path() / "real", "old");
  fs::create_symlink("real", dir.path() / "link");
  write_file_atomic(dir.path() / "link", "new");
  EXPECT_TRUE(fs::is_symlink(dir.path() / "link"));
  EXPECT_EQ(slurp(dir.path() / "real"), "new");
}

}  // namespace
}  // namespace rcts::harness
