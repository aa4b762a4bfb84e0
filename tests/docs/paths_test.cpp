// The docs name files that exist: every repository path written in docs/*.md and in
// every README.md (harness/run/runner.cpp, kernels/cpu/*.hpp,
// harness/dumps/dump_v1.{hpp,cpp}) and every relative Markdown link names a file or
// folder of the tree, so a moved file cannot leave a doc pointing at nothing.
// Placeholders (golden/<backend>/<case>.json) and build outputs are not paths of the
// tree and are skipped.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "doc_files.hpp"

namespace {

using namespace rcts::docs_test;

// docs/*.md and every README.md outside build trees.
std::vector<fs::path> documents() {
  std::vector<fs::path> out = docs_pages();
  const auto readmes = tree_files([](const fs::path& p) { return p.filename() == "README.md"; });
  out.insert(out.end(), readmes.begin(), readmes.end());
  return out;
}

// "a/{b,c}.d" -> "a/b.d", "a/c.d" (one brace group, as the docs write them).
std::vector<std::string> expand_braces(const std::string& p) {
  const auto open = p.find('{'), close = p.find('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return {p};
  std::vector<std::string> out;
  std::stringstream alts(p.substr(open + 1, close - open - 1));
  for (std::string a; std::getline(alts, a, ',');) out.push_back(p.substr(0, open) + a + p.substr(close + 1));
  return out;
}

// Whether `path` (relative to kRoot; '*' matches within one name) names something.
bool exists_in_tree(const std::string& path) {
  if (path.find('*') == std::string::npos) return fs::exists(kRoot / path);
  const fs::path p(path);
  const fs::path dir = kRoot / p.parent_path();
  if (p.parent_path().string().find('*') != std::string::npos || !fs::is_directory(dir)) return false;
  std::string re;
  for (char ch : p.filename().string()) re += ch == '*' ? std::string("[^/]*") : ch == '.' ? std::string("\\.") : std::string(1, ch);
  const std::regex name(re);
  for (const auto& e : fs::directory_iterator(dir))
    if (std::regex_match(e.path().filename().string(), name)) return true;
  return false;
}

// The repository paths a document's text writes, as written.
std::vector<std::string> paths_in(const std::string& text) {
  static const std::regex path(
      R"((?:^|[\s`(\[|'"])((?:harness|reference|kernels|backends|oracle|tests|cases|golden|expectations|docs|scripts|adapters|bench|cmake|\.ci)/[A-Za-z0-9_.*{},/-]*[A-Za-z0-9_*}/]))");
  std::vector<std::string> out;
  for (std::sregex_iterator m(text.begin(), text.end(), path), e; m != e; ++m) {
    const std::string p = (*m)[1];
    const size_t end = static_cast<size_t>(m->position(1) + m->length(1));
    // golden/<backend>/..., expectations/pytorch-2.15-<mode>.json: placeholders.
    size_t after = end;
    while (after < text.size() && (std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_' ||
                                   text[after] == '.' || text[after] == '-'))
      ++after;
    if (after < text.size() && text[after] == '<') continue;
    out.push_back(p);
  }
  return out;
}

// Relative Markdown link targets: [text](target), without web links and anchors.
std::vector<std::string> links_in(const std::string& text) {
  static const std::regex link(R"(\]\(([^)\s#]+)(?:#[^)]*)?\))");
  std::vector<std::string> out;
  for (std::sregex_iterator m(text.begin(), text.end(), link), e; m != e; ++m) {
    const std::string t = (*m)[1];
    if (t.find("://") == std::string::npos && t.rfind("mailto:", 0) != 0) out.push_back(t);
  }
  return out;
}

// The comments of a source or script, one per line as "line: text", for the path scan:
// what follows "//" (C++, CUDA) or "#" (CMake, shell, scripts) outside a string literal;
// a Python file whole (its docstrings are its comments, and its strings name real paths).
std::vector<std::pair<int, std::string>> comments_in(const fs::path& file, const std::string& text) {
  const std::string ext = file.extension().string();
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(text);
  std::string line;
  const bool cpp = ext == ".cpp" || ext == ".hpp" || ext == ".inc" || ext == ".cu" || ext == ".cuh" || ext == ".h";
  for (int n = 1; std::getline(in, line); ++n) {
    if (ext == ".py") {
      out.emplace_back(n, line);
      continue;
    }
    const std::string mark = cpp ? "//" : "#";
    bool quoted = false;
    for (size_t i = 0; i + mark.size() <= line.size(); ++i) {
      if (line[i] == '"' && (i == 0 || line[i - 1] != '\\')) quoted = !quoted;
      if (!quoted && line.compare(i, mark.size(), mark) == 0) {
        out.emplace_back(n, line.substr(i + mark.size()));
        break;
      }
    }
  }
  return out;
}

// The project's own sources and scripts.
std::vector<fs::path> code_files() {
  const auto code = [](const fs::path& p) {
    static const std::set<std::string> exts = {".cpp", ".hpp", ".inc", ".cu", ".cuh", ".h", ".py", ".sh", ".cmake", ".in"};
    const std::string dir = p.parent_path().filename().string();
    return exts.count(p.extension().string()) > 0 || p.filename() == "CMakeLists.txt" ||
           (p.extension().empty() && (dir == "scripts" || dir == ".ci"));
  };
  std::vector<fs::path> out = {kRoot / "CMakeLists.txt"};
  for (const char* dir : {"reference", "kernels", "backends", "oracle", "harness", "tests", "bench", "scripts", "adapters",
                          "cmake", ".ci"}) {
    const auto files = tree_files(code, dir);
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

TEST(DocPaths, EveryRepositoryPathInTheDocsExists) {
  std::vector<std::string> missing;
  int checked = 0;
  for (const auto& doc : documents()) {
    const std::string rel_doc = fs::relative(doc, kRoot).string();
    const std::string text = read(doc);
    for (const auto& p : paths_in(text))
      for (const auto& one : expand_braces(p)) {
        ++checked;
        if (!exists_in_tree(one)) missing.push_back(rel_doc + ": " + p);
      }
    for (const auto& l : links_in(text)) {
      ++checked;
      if (!fs::exists(doc.parent_path() / l)) missing.push_back(rel_doc + ": link (" + l + ")");
    }
  }
  EXPECT_GT(checked, 100) << "the scan found almost no paths: is the pattern still right?";
  EXPECT_TRUE(missing.empty()) << "docs name paths the repository does not have:" << listed(missing);
}

TEST(DocPaths, EveryRepositoryPathInCodeCommentsExists) {
  std::vector<std::string> missing;
  int checked = 0;
  for (const auto& f : code_files()) {
    const std::string rel = fs::relative(f, kRoot).string();
    for (const auto& [n, comment] : comments_in(f, read(f)))
      for (const auto& p : paths_in(comment))
        for (const auto& one : expand_braces(p)) {
          ++checked;
          if (!exists_in_tree(one)) missing.push_back(rel + ":" + std::to_string(n) + ": " + p);
        }
  }
  EXPECT_GT(checked, 300) << "the scan found almost no paths in comments: is the pattern still right?";
  EXPECT_TRUE(missing.empty()) << "code comments name paths the repository does not have:" << listed(missing);
}

TEST(DocPaths, CommentsAreFoundOutsideStrings) {
  const auto c = comments_in("x.cpp", "int a;  // see harness/io/npy.hpp\nf(\"a//b\");\n");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], (std::pair<int, std::string>{1, " see harness/io/npy.hpp"}));
  const auto sh = comments_in("CMakeLists.txt", "file(WRITE x \"#!/bin/sh\") # tests/x.sh\n# whole\n");
  ASSERT_EQ(sh.size(), 2u);
  EXPECT_EQ(sh[0].second, " tests/x.sh");
  EXPECT_EQ(sh[1], (std::pair<int, std::string>{2, " whole"}));
  EXPECT_EQ(comments_in("a.py", "x = 1\n\"\"\"doc\"\"\"\n").size(), 2u);
  EXPECT_EQ(paths_in(" against expectations/pytorch-2.15-<mode>.json"), std::vector<std::string>{});
}

// The scan must be able to fail, and must not flag what is no path of the tree.
TEST(DocPaths, TheScanFindsPathsAndSkipsPlaceholders) {
  const auto found = paths_in(
      "see `harness/run/runner.cpp`, (kernels/cpu/*.hpp) and harness/dumps/dump_v1.{hpp,cpp}.\n"
      "golden/<backend>/<case>.json is a placeholder; so is build/harness/rcts.\n"
      "| tests/nowhere/gone.cpp |");
  ASSERT_EQ(found.size(), 4u) << listed(found);
  EXPECT_EQ(found[0], "harness/run/runner.cpp");
  EXPECT_EQ(found[1], "kernels/cpu/*.hpp");
  EXPECT_EQ(found[2], "harness/dumps/dump_v1.{hpp,cpp}");
  EXPECT_EQ(found[3], "tests/nowhere/gone.cpp");
  EXPECT_TRUE(exists_in_tree(found[0]));
  EXPECT_TRUE(exists_in_tree(found[1]));
  for (const auto& one : expand_braces(found[2])) EXPECT_TRUE(exists_in_tree(one)) << one;
  EXPECT_FALSE(exists_in_tree(found[3]));
  EXPECT_FALSE(exists_in_tree("kernels/cpu/*.nothing"));
  EXPECT_EQ(links_in("[a](data-path.md) [b](https://x.org/y) [c](design.md#s1)"),
            (std::vector<std::string>{"data-path.md", "design.md"}));
}

}  // namespace
