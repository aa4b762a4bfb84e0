// The design in the repository is the one the code cites: every "design §n" in a
// source, script, case or document names a section "## §n" of docs/design.md, and no
// citation points at a document the repository does not have (DESIGN §n, SEMANTICS §n).
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

// Text files of the project (sources, scripts, cases, docs), not build output or goldens.
std::vector<fs::path> project_files() {
  const auto text = [](const fs::path& p) {
    const auto ext = p.extension().string();
    return ext == ".cpp" || ext == ".hpp" || ext == ".inc" || ext == ".cu" || ext == ".md" || ext == ".json" ||
           ext == ".cmake" || ext == ".txt" || ext == ".py" || ext.empty();
  };
  std::vector<fs::path> out;
  for (const char* dir : {"reference", "kernels", "backends", "harness", "tests", "bench", "scripts", "cases", "docs"}) {
    const auto files = tree_files(text, dir);
    out.insert(out.end(), files.begin(), files.end());
  }
  out.push_back(kRoot / "README.md");
  out.push_back(kRoot / "CMakeLists.txt");
  return out;
}

std::set<std::string> design_sections() {
  std::set<std::string> s;
  const std::string doc = read(kRoot / "docs" / "design.md");
  const std::regex heading(R"(\n## §(\d+) )");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), heading); it != std::sregex_iterator(); ++it)
    s.insert((*it)[1]);
  return s;
}

TEST(DesignCitations, EverySectionTheCodeCitesExists) {
  const auto sections = design_sections();
  ASSERT_GE(sections.size(), 11u) << "docs/design.md lost its numbered sections";
  // "design §5", also in lists such as "design §2, §5".
  const std::regex cite(R"(design (§\d+(?:, §\d+)*))"), number(R"(§(\d+))");
  std::vector<std::string> missing;
  int citations = 0;
  for (const auto& f : project_files()) {
    const std::string text = read(f);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), cite); it != std::sregex_iterator(); ++it) {
      const std::string list = (*it)[1];
      for (auto n = std::sregex_iterator(list.begin(), list.end(), number); n != std::sregex_iterator(); ++n) {
        ++citations;
        if (!sections.count((*n)[1])) missing.push_back(f.string() + ": design §" + (*n)[1].str());
      }
    }
  }
  EXPECT_GT(citations, 50) << "the scan found almost no citations: is the pattern still right?";
  std::string list;
  for (const auto& m : missing) list += "\n  " + m;
  EXPECT_TRUE(missing.empty()) << "citations of sections docs/design.md does not have:" << list;
}

TEST(DesignCitations, NoCitationOfADocumentOutsideTheRepository) {
  const std::regex outside(R"((DESIGN|SEMANTICS)(\.md)? ?§)");
  std::vector<std::string> bad;
  for (const auto& f : project_files()) {
    if (f.filename() == "citations_test.cpp") continue;
    std::ifstream in(f);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, outside)) bad.push_back(f.string() + ":" + std::to_string(n) + ": " + line);
  }
  std::string list;
  for (const auto& b : bad) list += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << "citations of documents the repository does not hold:" << list;
}

// A numbered issue is not something a reader of the repository can look up, so code and
// scripts state the rule instead of citing the issue that asked for it.
const std::regex kIssueCitation(R"(\b[Ii]ssues? #?\d)");

TEST(DesignCitations, NoCodeCitesANumberedIssue) {
  const auto code = [](const fs::path& p) {
    const auto ext = p.extension().string();
    return ext == ".cpp" || ext == ".hpp" || ext == ".inc" || ext == ".cu" || ext == ".cuh" || ext == ".py" ||
           ext == ".sh" || ext == ".cmake" || p.filename() == "CMakeLists.txt" ||
           (ext.empty() && p.parent_path().filename() == "scripts");
  };
  std::vector<std::string> bad;
  int files = 0;
  for (const char* dir : {"reference", "kernels", "backends", "oracle", "harness", "tests", "bench", "scripts", "adapters"})
    for (const auto& f : tree_files(code, dir)) {
      if (f.filename() == "citations_test.cpp") continue;
      ++files;
      std::ifstream in(f);
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, kIssueCitation)) bad.push_back(f.string() + ":" + std::to_string(n) + ": " + line);
    }
  EXPECT_GT(files, 300);
  std::string list;
  for (const auto& b : bad) list += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << "code cites numbered issues; say what the rule is instead:" << list;
}

TEST(DesignCitations, TheIssuePatternCatchesItsTargets) {
  for (const char* hit : {"// (issue 15, item 4)", "# Issue 28's rule", "issues 27 and 29", "see issue #12"})
    EXPECT_TRUE(std::regex_search(std::string(hit), kIssueCitation)) << hit;
  for (const char* miss : {"an issue of the framework", "\"issue\": \"https://x\"", "tissue 3"})
    EXPECT_FALSE(std::regex_search(std::string(miss), kIssueCitation)) << miss;
}

}  // namespace
