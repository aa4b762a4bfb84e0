// A case's id is its path under cases/ with '/' as '.' and without ".json"
// (cases/full/block.bf16.json is full.block.bf16), so an id in a report leads to its file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/cases/case.hpp"

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;

TEST(CaseIds, EveryCaseIdIsItsPath) {
  const fs::path root = fs::path(RCTS_SOURCE_DIR) / "cases";
  const auto cases = load_cases({root});
  ASSERT_GT(cases.size(), 100u);
  for (const auto& c : cases) {
    std::string want = fs::relative(c.file, root).replace_extension().generic_string();
    for (char& ch : want)
      if (ch == '/') ch = '.';
    EXPECT_EQ(c.id, want) << c.file;
  }
}

}  // namespace
}  // namespace rcts::harness
