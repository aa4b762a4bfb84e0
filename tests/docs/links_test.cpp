// The README and the docs lead somewhere: every relative link of README.md, docs/*.md
// and cases/README.md names a file or directory of the repository (and, with
// "#anchor", a heading of that page), and every script the README names exists and is
// executable. Whether the README's commands run is tests/docs/readme_commands.cmake.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "doc_files.hpp"

namespace {

using namespace rcts::docs_test;

// Markdown pages whose links are checked.
std::vector<fs::path> pages() {
  std::vector<fs::path> out = {kRoot / "README.md", kRoot / "cases" / "README.md"};
  const auto docs = docs_pages();
  out.insert(out.end(), docs.begin(), docs.end());
  return out;
}

// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as '-'.
std::string anchor_of(const std::string& heading) {
  std::string a;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) a += static_cast<char>(std::tolower(c));
    else if (c == ' ') a += '-';
  }
  return a;
}

std::set<std::string> anchors(const fs::path& page) {
  std::set<std::string> out;
  std::istringstream lines(read(page));
  bool fenced = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) fenced = !fenced;
    if (fenced || line.empty() || line[0] != '#') continue;
    const size_t text = line.find_first_not_of('#');
    if (text != std::string::npos && line[text] == ' ') out.insert(anchor_of(line.substr(text + 1)));
  }
  return out;
}

TEST(DocLinks, EveryRelativeLinkNamesAFileAndHeadingThatExist) {
  const std::regex link(R"(\]\(([^)\s]+)\))");
  std::vector<std::string> broken;
  int checked = 0;
  for (const auto& page : pages()) {
    const std::string text = read(page);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      ++checked;
      const size_t hash = target.find('#');
      const std::string file = target.substr(0, hash);
      const fs::path resolved = file.empty() ? page : page.parent_path() / file;
      const std::string where = fs::relative(page, kRoot).string() + ": (" + target + ")";
      if (!fs::exists(resolved)) {
        broken.push_back(where + ": no such file");
      } else if (hash != std::string::npos && !anchors(resolved).count(target.substr(hash + 1))) {
        broken.push_back(where + ": no heading with that anchor in " + fs::relative(resolved, kRoot).string());
      }
    }
  }
  EXPECT_GT(checked, 20) << "the scan found almost no links: is the pattern still right?";
  std::string list;
  for (const auto& b : broken) list += "\n  " + b;
  EXPECT_TRUE(broken.empty()) << "links to nothing:" << list;
}

TEST(DocLinks, EveryScriptTheReadmeNamesIsAnExecutableFile) {
  const std::string readme = read(kRoot / "README.md");
  const std::regex script(R"(scripts/([A-Za-z0-9_.-]+))");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), script); it != std::sregex_iterator(); ++it)
    names.insert((*it)[1]);
  EXPECT_TRUE(names.count("conformance") && names.count("test")) << "the README no longer names its two commands";
  for (const auto& n : names) {
    const fs::path p = kRoot / "scripts" / n;
    EXPECT_TRUE(fs::is_regular_file(p)) << "README names scripts/" << n << ", which does not exist";
    EXPECT_NE(fs::status(p).permissions() & fs::perms::owner_exec, fs::perms::none) << "scripts/" << n << " is not executable";
  }
}

TEST(DocLinks, AnchorsFollowGitHubsRule) {
  EXPECT_EQ(anchor_of("Golden files: regenerating them"), "golden-files-regenerating-them");
  EXPECT_EQ(anchor_of("Pictures: `rcts run --report DIR`"), "pictures-rcts-run---report-dir");
  EXPECT_EQ(anchor_of("Determinism rules (design §2)"), "determinism-rules-design-§2");
}

}  // namespace
