// The harness's walls (docs/design.md §1): every folder under harness/ is one CMake
// library (harness/CMakeLists.txt, rcts_harness_area) on a layer; a library links only
// libraries of lower layers, and a file includes only its own folder or folders its
// library reaches through those links. So a file that includes a folder above it, or
// a library that links one it should not, fails here, naming the file and line or the
// link. The scan reads the tree it was built from.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = RCTS_SOURCE_DIR;

// The layers, lowest first: the drawing of design §1. A folder may link and include
// only folders of a lower layer.
const std::map<std::string, int> kLayer = {
    {"io", 0},     {"results", 0},  // bytes in and out; the result model
    {"cases", 1},  {"megatron", 1},  // case files and the expect schema; Megatron-LM settings
    {"golden", 2},                  // golden files
    {"checks", 3},                  // the check registry and every check
    {"ranks", 4},                   // agreement between ranks, result merge
    {"dumps", 5},  {"reports", 5},  // dump format 1; text, JSON, JUnit, HTML, traces
    {"run", 6},                     // the runner
    {"expectations", 6},            // expectation files: outcomes vs what a framework is known to fail
    {"matrix", 6},                  // rcts matrix: several reports as one page
    {"cli", 7},                     // one file per subcommand
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Folder -> the harness folders its library links (PUBLIC or PRIVATE), from the text of
// harness/CMakeLists.txt.
std::map<std::string, std::set<std::string>> cmake_links(const std::string& cmake) {
  std::map<std::string, std::set<std::string>> links;
  const std::regex area(R"(rcts_harness_area\(\s*(\w+)([^)]*)\))");
  const std::regex extra(R"(target_link_libraries\(\s*rcts_harness_(\w+)\s+(?:PUBLIC|PRIVATE|INTERFACE)([^)]*)\))");
  const std::regex dep(R"(rcts_harness_(\w+))");
  auto add = [&](const std::string& folder, const std::string& deps, bool create) {
    if (create) links[folder];
    for (std::sregex_iterator d(deps.begin(), deps.end(), dep), e; d != e; ++d) links[folder].insert((*d)[1]);
  };
  for (std::sregex_iterator m(cmake.begin(), cmake.end(), area), e; m != e; ++m) add((*m)[1], (*m)[2], true);
  for (std::sregex_iterator m(cmake.begin(), cmake.end(), extra), e; m != e; ++m)
    if (links.count((*m)[1])) add((*m)[1], (*m)[2], false);
  return links;
}

// Every harness folder reachable from `folder` through its links, itself included.
std::set<std::string> reach(const std::map<std::string, std::set<std::string>>& links, const std::string& folder) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {folder};
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    if (!seen.insert(f).second) continue;
    if (auto it = links.find(f); it != links.end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
  }
  return seen;
}

int layer_of(const std::string& folder) {
  auto it = kLayer.find(folder);
  return it == kLayer.end() ? -1 : it->second;
}

// Links that break the layering: to an unknown folder, to the same or a higher layer.
std::vector<std::string> link_violations(const std::map<std::string, std::set<std::string>>& links) {
  std::vector<std::string> out;
  for (const auto& [folder, deps] : links) {
    if (layer_of(folder) < 0) out.push_back("rcts_harness_" + folder + ": a library on no layer of this test");
    for (const auto& d : deps)
      if (layer_of(d) < 0 || layer_of(d) >= layer_of(folder))
        out.push_back("rcts_harness_" + folder + " links rcts_harness_" + d + " (layer " + std::to_string(layer_of(d)) +
                      ", not below " + std::to_string(layer_of(folder)) + ")");
  }
  return out;
}

// Includes of harness folders in one file's text that `folder`'s library does not reach
// or that sit on its layer or above; "file:line: text" each.
std::vector<std::string> include_violations(const std::string& file, const std::string& folder, const std::string& text,
                                            const std::map<std::string, std::set<std::string>>& links) {
  std::vector<std::string> out;
  const std::regex inc(R"(^\s*#\s*include\s*["<]harness/(\w+)/)");
  const std::set<std::string> reached = reach(links, folder);
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, inc)) continue;
    const std::string to = m[1];
    if (to == folder) continue;
    if (!reached.count(to) || layer_of(to) < 0 || layer_of(to) >= layer_of(folder))
      out.push_back(file + ":" + std::to_string(n) + ": " + line);
  }
  return out;
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

TEST(Layering, EveryHarnessFolderIsALibraryOnALayer) {
  const auto links = cmake_links(read(kRoot / "harness" / "CMakeLists.txt"));
  for (const auto& e : fs::directory_iterator(kRoot / "harness")) {
    if (!e.is_directory()) continue;
    const std::string f = e.path().filename().string();
    EXPECT_TRUE(links.count(f)) << "harness/" << f << " has no rcts_harness_area in harness/CMakeLists.txt";
    EXPECT_GE(layer_of(f), 0) << "harness/" << f << " is on no layer (tests/layering, design §1)";
  }
  for (const auto& [f, deps] : links) EXPECT_TRUE(fs::is_directory(kRoot / "harness" / f)) << "no folder harness/" << f;
}

TEST(Layering, LibrariesLinkOnlyLowerLayers) {
  const auto bad = link_violations(cmake_links(read(kRoot / "harness" / "CMakeLists.txt")));
  EXPECT_TRUE(bad.empty()) << "harness libraries link upwards or sideways:" << listed(bad);
}

TEST(Layering, FilesIncludeOnlyWhatTheirLibraryLinks) {
  const auto links = cmake_links(read(kRoot / "harness" / "CMakeLists.txt"));
  std::vector<std::string> bad;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "harness")) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    const fs::path rel = fs::relative(e.path(), kRoot / "harness");
    if (rel.begin() == rel.end() || std::next(rel.begin()) == rel.end()) continue;  // harness/main.cpp: the top
    ++files;
    const auto more = include_violations("harness/" + rel.string(), rel.begin()->string(), read(e.path()), links);
    bad.insert(bad.end(), more.begin(), more.end());
  }
  EXPECT_GT(files, 50);
  EXPECT_TRUE(bad.empty()) << "harness files include a folder above them or one their library does not link:"
                           << listed(bad);
}

// The checks must be able to fail: an include upwards, an include of a folder the
// library does not link, and links upwards or sideways are caught.
TEST(Layering, ViolationsAreCaught) {
  const auto links = cmake_links(
      "rcts_harness_area(io rcts_reference)\n"
      "rcts_harness_area(cases rcts_harness_io)\n"
      "rcts_harness_area(golden rcts_harness_cases)\n"
      "rcts_harness_area(checks rcts_harness_golden rcts_backends)\n"
      "target_link_libraries(rcts_harness_checks PRIVATE rcts_harness_run)\n"
      "rcts_harness_area(megatron rcts_harness_cases)\n"
      "rcts_harness_area(run rcts_harness_checks)\n");
  EXPECT_EQ(links.at("checks"), (std::set<std::string>{"golden", "run"}));
  const auto bad_links = link_violations(links);
  ASSERT_EQ(bad_links.size(), 2u) << listed(bad_links);
  EXPECT_NE(bad_links[0].find("rcts_harness_checks links rcts_harness_run"), std::string::npos) << bad_links[0];
  EXPECT_NE(bad_links[1].find("rcts_harness_megatron links rcts_harness_cases"), std::string::npos) << bad_links[1];

  const std::string text =
      "#include \"harness/golden/golden.hpp\"\n"      // reached, below: fine
      "#include \"harness/io/strict_json.hpp\"\n"     // reached through golden -> cases -> io: fine
      "#include \"harness/cases/case.hpp\"\n"         // fine
      "  #  include <harness/run/runner.hpp>\n"      // above
      "#include \"harness/megatron/megatron.hpp\"\n"  // below but not linked
      "#include \"reference/core/error.hpp\"\n";
  const auto bad = include_violations("harness/golden/x.cpp", "golden", text, links);
  EXPECT_EQ(bad.size(), 2u) << listed(bad);
  // checks links run, yet run is above it: still refused.
  const auto from_checks = include_violations("harness/checks/x.cpp", "checks", text, links);
  ASSERT_EQ(from_checks.size(), 2u) << listed(from_checks);
  EXPECT_NE(from_checks[0].find("harness/checks/x.cpp:4:"), std::string::npos) << from_checks[0];
  EXPECT_NE(from_checks[1].find("harness/checks/x.cpp:5:"), std::string::npos) << from_checks[1];
}

}  // namespace
