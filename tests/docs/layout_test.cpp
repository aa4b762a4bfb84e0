// docs/layout.md names every folder of the tree: each top-level folder, and each folder
// directly below harness/, reference/, kernels/, backends/, adapters/ and tests/, appears
// in it as a path (its paths existing is paths_test.cpp's check). So a folder added
// without a line in the layout, or a layout line left behind by a removed folder, fails.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "doc_files.hpp"

namespace {

using namespace rcts::docs_test;

// Folders of the project that docs/layout.md must name, as "dir/".
std::vector<std::string> required_folders() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kRoot)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name == ".git" || name.rfind("build", 0) == 0 || name == "venv") continue;
    out.push_back(name + "/");
  }
  for (const char* parent : {"harness", "reference", "kernels", "backends", "adapters", "tests"})
    for (const auto& e : fs::directory_iterator(kRoot / parent)) {
      const std::string name = e.path().filename().string();
      if (e.is_directory() && name != "__pycache__") out.push_back(std::string(parent) + "/" + name + "/");
    }
  return out;
}

// Whether `layout` names `folder` ("a/b/") as a path of its own, not as part of a longer one.
bool names(const std::string& layout, const std::string& folder) {
  const std::string quoted = std::regex_replace(folder, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
  return std::regex_search(layout, std::regex("(^|[\\s`(])" + quoted + "?(?=[\\s`),:]|$)"));
}

TEST(DocLayout, EveryFolderIsNamed) {
  const std::string layout = read(kRoot / "docs" / "layout.md");
  const auto folders = required_folders();
  EXPECT_GT(folders.size(), 40u) << "the walk found almost no folders";
  std::string missing;
  for (const auto& f : folders)
    if (!names(layout, f)) missing += "\n  " + f;
  EXPECT_TRUE(missing.empty()) << "docs/layout.md does not name these folders:" << missing;
}

TEST(DocLayout, TheMatchIsAWholePath) {
  EXPECT_TRUE(names("harness/io/   strict JSON", "harness/io/"));
  EXPECT_TRUE(names("see `harness/io`.", "harness/io/"));
  EXPECT_TRUE(names("x (harness/io) y", "harness/io/"));
  EXPECT_FALSE(names("harness/iox/ bytes", "harness/io/"));
  EXPECT_FALSE(names("tests/harness/io/ bytes", "harness/io/"));
  EXPECT_FALSE(names("", ".ci/"));
}

}  // namespace
