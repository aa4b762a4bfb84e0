// The walls between libraries (docs/design.md §1), across kernels/, reference/,
// backends/, oracle/ and harness/: every source file belongs to one CMake library (the
// table below), every library sits on a layer, a library links only libraries on lower
// layers, and a file includes only its own library's files or those of a library its
// links reach; first-party includes are named from the repository root (no "." or ".."
// part, no quoted path outside the five trees, no tests/ header), so none can hide from
// the table. So an include running up a layer, a file using a library its own does
// not link, or a link upwards or sideways fails here, naming the file and line or the
// link. The drawing of design §1 is checked against the same table, line for line. The
// scan reads the tree it was built from.
#include <gtest/gtest.h>

#include <algorithm>
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

// One row per path prefix: the files whose path starts with `prefix` (the longest
// matching prefix wins) belong to `library`. Layers count from the bottom; a library's
// rows all carry its layer. Design §1 draws these prefixes, one line per layer, top
// first.
struct Row {
  std::string prefix, library;
  int layer;
};
const std::vector<Row> kTable = {
    {"harness/cli", "rcts_harness_cli", 16},
    {"harness/main.cpp", "rcts", 17},
    {"harness/run", "rcts_harness_run", 15},
    {"harness/expectations", "rcts_harness_expectations", 15},
    {"harness/matrix", "rcts_harness_matrix", 15},
    {"harness/reports", "rcts_harness_reports", 14},
    {"harness/ranks", "rcts_harness_ranks", 13},
    {"harness/checks", "rcts_harness_checks", 12},
    {"harness/golden", "rcts_harness_golden", 11},
    {"harness/cases", "rcts_harness_cases", 10},
    {"harness/megatron", "rcts_harness_megatron", 10},
    {"harness/dumps", "rcts_harness_dumps", 10},
    {"harness/io", "rcts_harness_io", 9},
    {"harness/results", "rcts_harness_results", 9},
    {"oracle", "rcts_oracle", 8},
    {"reference/driver", "rcts_driver", 7},
    {"reference/modules", "rcts_modules", 6},
    {"backends/registry*", "rcts_backends", 6},
    {"reference/runtime", "rcts_runtime", 5},
    {"backends/cuda", "rcts_backend_cuda", 5},
    {"reference/offload", "rcts_offload", 4},
    {"backends/cpu", "rcts_backend_cpu", 4},
    {"reference/backend", "rcts_backend", 3},
    {"reference/recompute", "rcts_recompute", 3},
    {"reference/memory_model", "rcts_memory_model", 3},
    {"reference/rng", "rcts_rng", 2},
    {"reference/parallel", "rcts_parallel", 2},
    {"reference/config", "rcts_config", 2},
    {"kernels/cpu", "rcts_kernels_cpu", 2},
    {"backends/cuda/kernels.cu", "rcts_cuda_kernels", 2},
    {"backends/cuda/launch*", "rcts_cuda_kernels", 2},  // the launch plumbing kernels.cu includes
    {"oracle/philox_masks*", "rcts_oracle_masks", 2},
    {"reference/core", "rcts_core", 1},
    {"kernels/exact", "rcts_kernels_exact", 1},
    {"kernels/cpu/gemm*", "rcts_gemm_cpu", 1},
    {"kernels/cpu/cpu_features.hpp", "rcts_gemm_cpu", 1},  // the CPU check the GEMM paths start from
    {"kernels/common", "rcts_kernels_common", 0},
    {"kernels/cuda", "rcts_kernels_common", 0},  // kernels/common compiled for the device (tests/cuda)
};
// Libraries that only gather others (an include through them reaches what they link)
// or wrap a library from outside.
const std::set<std::string> kGathering = {"rcts_reference", "rcts_harness", "rcts_cublaslt"};
const std::vector<std::string> kTrees = {"kernels", "reference", "backends", "oracle", "harness"};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

// A prefix ending in '*' owns the files whose paths start with the rest; any other
// prefix is a folder owning what lies below it, or one file.
bool owns(const std::string& prefix, const std::string& path) {
  if (!prefix.empty() && prefix.back() == '*') return path.compare(0, prefix.size() - 1, prefix, 0, prefix.size() - 1) == 0;
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

const Row* row_of(const std::string& path, const std::vector<Row>& table) {
  const Row* best = nullptr;
  for (const auto& r : table)
    if (owns(r.prefix, path) && (!best || r.prefix.size() > best->prefix.size())) best = &r;
  return best;
}

int layer_of(const std::string& library, const std::vector<Row>& table) {
  for (const auto& r : table)
    if (r.library == library) return r.layer;
  return -1;
}

using Links = std::map<std::string, std::set<std::string>>;

// Library -> the first-party libraries it links (PUBLIC, PRIVATE or INTERFACE), from
// CMake text: add_library, the areas' helper functions and target_link_libraries.
// (A name built from a variable, rcts_${name}, is the helper's own body: skipped.)
Links cmake_links(const std::string& text) {
  const std::string cmake = std::regex_replace(text, std::regex("#[^\n]*"), "");
  Links links;
  const std::regex defined(R"(\badd_library\(\s*(rcts_\w+)\b(?!\$))");
  const std::regex area(R"(\brcts_(harness_)?area\(\s*(\w+)([^)]*)\))");
  const std::regex link(R"(\btarget_link_libraries\(\s*(rcts_\w+)\b(?!\$)([^)]*)\))");
  const std::regex dep(R"(\brcts_\w+)");
  auto add = [&](const std::string& lib, const std::string& deps) {
    for (std::sregex_iterator d(deps.begin(), deps.end(), dep), e; d != e; ++d) links[lib].insert((*d)[0]);
  };
  for (std::sregex_iterator m(cmake.begin(), cmake.end(), defined), e; m != e; ++m) links[(*m)[1]];
  for (std::sregex_iterator m(cmake.begin(), cmake.end(), area), e; m != e; ++m)
    add("rcts_" + std::string((*m)[1]) + std::string((*m)[2]), (*m)[3]);
  for (std::sregex_iterator m(cmake.begin(), cmake.end(), link), e; m != e; ++m) add((*m)[1], (*m)[2]);
  return links;
}

std::string tree_cmake() {
  std::string all;
  for (const auto& t : kTrees) all += read(kRoot / t / "CMakeLists.txt") + "\n";
  return all;
}

// Every library reachable from `lib` through its links, itself included.
std::set<std::string> reach(const Links& links, const std::string& lib) {
  std::set<std::string> seen;
  std::vector<std::string> todo = {lib};
  while (!todo.empty()) {
    const std::string l = todo.back();
    todo.pop_back();
    if (!seen.insert(l).second) continue;
    if (auto it = links.find(l); it != links.end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
  }
  return seen;
}

// Links that break the layering: from or to a library on no layer, to the same or a
// higher layer (a gathering library counts as the libraries it links).
std::vector<std::string> link_violations(const Links& links, const std::vector<Row>& table) {
  std::vector<std::string> out;
  for (const auto& [lib, deps] : links) {
    if (kGathering.count(lib)) continue;
    const int own = layer_of(lib, table);
    if (own < 0) {
      out.push_back(lib + ": a library on no layer of this test's table");
      continue;
    }
    std::set<std::string> direct;
    for (const auto& d : deps) {
      if (!kGathering.count(d)) {
        direct.insert(d);
        continue;
      }
      for (const auto& r : reach(links, d))
        if (!kGathering.count(r)) direct.insert(r);
    }
    for (const auto& d : direct)
      if (layer_of(d, table) < 0 || layer_of(d, table) >= own)
        out.push_back(lib + " links " + d + " (layer " + std::to_string(layer_of(d, table)) + ", not below " +
                      std::to_string(own) + ")");
  }
  return out;
}

// First-party includes in one file's text that its library neither owns nor reaches
// through its links; "file:line: text (why)" each.
std::vector<std::string> include_violations(const std::string& file, const std::string& text, const Links& links,
                                            const std::vector<Row>& table) {
  std::vector<std::string> out;
  const Row* own = row_of(file, table);
  if (!own) return {file + ": belongs to no library of this test's table"};
  const std::regex inc(R"(^\s*#\s*include\s*["<]((kernels|reference|backends|oracle|harness)/[^">]+)[">])");
  // Any include, for the forms that would hide a first-party file from the rows: a path
  // with a "." or ".." part ("../run/runner.hpp", "harness/golden/../run/runner.hpp"),
  // a quoted path not rooted at one of the five trees (a sibling "f64_block.hpp" may be
  // another library's: oracle/ and kernels/cpu/ hold two), and a test header.
  const std::regex any_inc(R"(^\s*#\s*include\s*(["<])([^">]+)[">])");
  const std::regex dot_part(R"((^|/)\.\.?(/|$))");
  const std::regex rooted(R"(^(kernels|reference|backends|oracle|harness)/)");
  const std::set<std::string> reached = reach(links, own->library);
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::smatch m;
    const std::string where = file + ":" + std::to_string(n) + ": " + line;
    if (std::regex_search(line, m, any_inc)) {
      const std::string path = m[2];
      if (std::regex_search(path, dot_part)) {
        out.push_back(where + " (a relative path: name first-party files from the repository root)");
        continue;
      }
      if (path.rfind("tests/", 0) == 0) {
        out.push_back(where + " (a test header: the trees include no file of tests/)");
        continue;
      }
      if (m[1] == "\"" && !std::regex_search(path, rooted)) {
        out.push_back(where + " (a quoted include rooted at no tree: first-party includes start kernels/, "
                              "reference/, backends/, oracle/ or harness/)");
        continue;
      }
    }
    if (!std::regex_search(line, m, inc)) continue;
    const Row* to = row_of(m[1], table);
    if (!to) {
      out.push_back(where + " (a path no library owns)");
    } else if (to->library == own->library) {
      continue;
    } else if (to->layer >= own->layer) {
      out.push_back(where + " (" + to->library + " is on layer " + std::to_string(to->layer) + ", not below " +
                    own->library + "'s " + std::to_string(own->layer) + ")");
    } else if (!reached.count(to->library)) {
      out.push_back(where + " (" + own->library + " does not link " + to->library + ")");
    }
  }
  return out;
}

bool is_source(const fs::path& p) {
  static const std::set<std::string> exts = {".cpp", ".hpp", ".h", ".inc", ".cu", ".cuh"};
  return exts.count(p.extension().string()) > 0;
}

TEST(Layering, EveryLibraryIsOnALayerAndEveryRowNamesALibrary) {
  const Links links = cmake_links(tree_cmake());
  for (const auto& [lib, deps] : links)
    EXPECT_TRUE(kGathering.count(lib) || layer_of(lib, kTable) >= 0) << lib << " is on no layer (tests/layering)";
  for (const auto& r : kTable) {
    EXPECT_TRUE(links.count(r.library) || r.library == "rcts") << r.prefix << ": no library " << r.library;
    const std::string p = r.prefix.back() == '*' ? r.prefix.substr(0, r.prefix.size() - 1) : r.prefix;
    bool found = fs::exists(kRoot / p);
    if (!found && p != r.prefix)
      for (const auto& e : fs::directory_iterator(kRoot / fs::path(p).parent_path()))
        found = found || e.path().filename().string().rfind(fs::path(p).filename().string(), 0) == 0;
    EXPECT_TRUE(found) << "no path " << r.prefix;
  }
  for (const auto& a : kTable)
    for (const auto& b : kTable)
      if (a.library == b.library) EXPECT_EQ(a.layer, b.layer) << a.library << " on two layers";
}

TEST(Layering, LibrariesLinkOnlyLowerLayers) {
  const auto bad = link_violations(cmake_links(tree_cmake()), kTable);
  EXPECT_TRUE(bad.empty()) << "libraries link upwards, sideways or off the table:" << listed(bad);
}

TEST(Layering, FilesIncludeOnlyWhatTheirLibraryLinks) {
  Links links = cmake_links(tree_cmake());
  links["rcts"] = {"rcts_harness_cli"};  // harness/CMakeLists.txt: add_executable(rcts main.cpp)
  std::vector<std::string> bad;
  std::map<std::string, int> files;
  for (const auto& tree : kTrees)
    for (const auto& e : fs::recursive_directory_iterator(kRoot / tree)) {
      if (!e.is_regular_file() || !is_source(e.path())) continue;
      ++files[tree];
      const std::string rel = fs::relative(e.path(), kRoot).generic_string();
      const auto more = include_violations(rel, read(e.path()), links, kTable);
      bad.insert(bad.end(), more.begin(), more.end());
    }
  for (const auto& tree : kTrees) EXPECT_GT(files[tree], 3) << tree << ": the scan found almost no files";
  EXPECT_TRUE(bad.empty()) << "files include a library above them or one their library does not link:" << listed(bad);
}

// The drawing of design §1: lines "a, b ── what they hold" name one layer's prefixes,
// top layer first, each layer drawn once. Returns the layers as drawn.
std::vector<std::set<std::string>> drawn_layers(const std::string& design) {
  const auto start = design.find("## §1 ");
  const auto open = design.find("```\n", start);
  const auto close = design.find("```\n", open + 4);
  std::vector<std::set<std::string>> out;
  std::istringstream in(design.substr(open + 4, close - open - 4));
  std::string line;
  const std::regex drawn(R"(^([a-z_/.*]+(?:, [a-z_/.*]+)*) ──)");
  const std::regex item(R"([a-z_/.*]+)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, drawn)) continue;
    const std::string names = m[1];
    std::set<std::string> layer;
    for (std::sregex_iterator i(names.begin(), names.end(), item), e; i != e; ++i) layer.insert((*i)[0]);
    out.push_back(layer);
  }
  return out;
}

TEST(Layering, DesignDrawingIsTheTable) {
  std::map<int, std::set<std::string>> by_layer;
  for (const auto& r : kTable)
    if (r.library != "rcts") by_layer[r.layer].insert(r.prefix);
  std::vector<std::set<std::string>> want;
  for (auto it = by_layer.rbegin(); it != by_layer.rend(); ++it) want.push_back(it->second);
  const auto drawn = drawn_layers(read(kRoot / "docs" / "design.md"));
  auto text = [](const std::vector<std::set<std::string>>& layers) {
    std::string s;
    for (const auto& l : layers) {
      s += "\n ";
      for (const auto& p : l) s += " " + p;
    }
    return s;
  };
  EXPECT_EQ(text(drawn), text(want)) << "design §1's drawing and tests/layering's table differ (drawn, then table)";
}

// The checks must be able to fail. In each of the five trees: an include of a library
// above (caught), and an include of a library below that the file's library does not
// link (caught); and links upwards or sideways.
TEST(Layering, ViolationsAreCaughtInEveryTree) {
  const Links links = cmake_links(tree_cmake());
  struct Plant {
    std::string file, include;
    std::string why;  // what the message must say
  };
  const std::vector<Plant> plants = {
      {"kernels/common/x.hpp", "kernels/cpu/gemm.hpp", "not below"},
      {"kernels/cpu/x.cpp", "reference/core/tensor.hpp", "does not link rcts_core"},
      {"reference/core/x.cpp", "reference/runtime/runtime.hpp", "not below"},
      {"reference/memory_model/x.cpp", "reference/rng/philox.hpp", "does not link rcts_rng"},
      {"backends/cpu/x.cpp", "backends/registry.hpp", "not below"},
      {"backends/cpu/x.cpp", "reference/config/config.hpp", "does not link rcts_config"},
      {"oracle/philox_masks.cpp", "oracle/f64_block.hpp", "not below"},
      {"oracle/compare.cpp", "backends/cpu/cpu_backend.hpp", "does not link rcts_backend_cpu"},
      {"harness/golden/x.cpp", "harness/run/runner.hpp", "not below"},
      {"harness/golden/x.cpp", "harness/megatron/megatron_args.hpp", "does not link rcts_harness_megatron"},
  };
  // In each tree, the forms that would hide a first-party file from the rows: a relative
  // path (up, or through ".."), a quoted sibling of another library, a test header.
  const std::vector<Plant> hidden = {
      {"kernels/cpu/x.cpp", "../../reference/core/tensor.hpp", "a relative path"},
      {"kernels/cpu/x.cpp", "gemm.hpp", "rooted at no tree"},
      {"reference/core/x.cpp", "reference/core/../runtime/runtime.hpp", "a relative path"},
      {"reference/core/x.cpp", "tests/support/configs.hpp", "a test header"},
      {"backends/cpu/x.cpp", "../registry.hpp", "a relative path"},
      {"backends/cpu/x.cpp", "./cpu_backend.hpp", "a relative path"},
      {"oracle/philox_masks.cpp", "f64_block.hpp", "rooted at no tree"},
      {"oracle/compare.cpp", "../harness/checks/mask_oracle.hpp", "a relative path"},
      {"harness/golden/x.cpp", "../run/runner.hpp", "a relative path"},
      {"harness/golden/x.cpp", "harness/golden/../run/runner.hpp", "a relative path"},
  };
  std::vector<Plant> all = plants;
  all.insert(all.end(), hidden.begin(), hidden.end());
  for (const auto& p : all) {
    const std::string text = "#include <vector>\n#include \"" + p.file + "\"\n  #  include \"" + p.include + "\"\n";
    const auto bad = include_violations(p.file, text, links, kTable);
    ASSERT_EQ(bad.size(), 1u) << p.file << " including " << p.include << ":" << listed(bad);
    EXPECT_NE(bad[0].find(p.file + ":3:"), std::string::npos) << bad[0];
    EXPECT_NE(bad[0].find(p.why), std::string::npos) << bad[0];
  }
  // An angle include of a system or third-party header passes; so does a name with dots.
  EXPECT_TRUE(include_violations("backends/cuda/x.cpp", "#include <cuda_runtime.h>\n#include <nlohmann/json.hpp>\n",
                                 links, kTable)
                  .empty());
  EXPECT_TRUE(include_violations("harness/io/x.cpp", "#include \"harness/io/a..b.hpp\"\n", links, kTable).empty());
  // What is linked and below passes, through a gathering library too.
  EXPECT_TRUE(include_violations("harness/io/x.cpp", "#include \"reference/driver/execute.hpp\"\n", links, kTable).empty());
  EXPECT_TRUE(include_violations("kernels/cpu/x.cpp", "#include \"kernels/exact/norm.hpp\"\n", links, kTable).empty());
  // A file no row owns, and a path no library owns.
  EXPECT_EQ(include_violations("tools/x.cpp", "", links, kTable).size(), 1u);
  EXPECT_EQ(include_violations("kernels/cpu/x.cpp", "#include <harnessy/x.hpp>\n#include <oracle_x/y.hpp>\n", links,
                               kTable)
                .size(),
            0u);
  // Quoted, the same look-alikes are rooted at no tree.
  EXPECT_EQ(include_violations("kernels/cpu/x.cpp", "#include \"harnessy/x.hpp\"\n#include \"oracle_x/y.hpp\"\n", links,
                               kTable)
                .size(),
            2u);

  const Links planted = cmake_links(
      "rcts_area(core rcts_kernels_common)\n"
      "rcts_area(config rcts_core rcts_runtime)\n"
      "rcts_harness_area(golden rcts_harness_cases)\n"
      "target_link_libraries(rcts_harness_golden PRIVATE rcts_harness_run)\n"
      "rcts_harness_area(megatron rcts_harness_cases)\n"
      "add_library(rcts_reference INTERFACE)\n"
      "target_link_libraries(rcts_reference INTERFACE rcts_driver)\n"
      "rcts_area(kernels_cpu_typo rcts_core)\n"
      "target_link_libraries(rcts_backend_cpu PUBLIC rcts_reference)\n");
  EXPECT_EQ(planted.at("rcts_harness_golden"), (std::set<std::string>{"rcts_harness_cases", "rcts_harness_run"}));
  const auto bad_links = link_violations(planted, kTable);
  const std::vector<std::string> want = {
      "rcts_backend_cpu links rcts_driver (layer 7, not below 4)",
      "rcts_config links rcts_runtime (layer 5, not below 2)",
      "rcts_harness_golden links rcts_harness_run (layer 15, not below 11)",
      "rcts_harness_megatron links rcts_harness_cases (layer 10, not below 10)",
      "rcts_kernels_cpu_typo: a library on no layer of this test's table",
  };
  EXPECT_EQ(bad_links, want) << listed(bad_links);

  // A drawing that leaves out a prefix or draws two layers as one differs from the table.
  const auto drawn = drawn_layers("## §1 x\n\n```\nharness/cli ── the CLI\n   ▼\nharness/run, oracle ── both\n```\n");
  ASSERT_EQ(drawn.size(), 2u);
  EXPECT_EQ(drawn[1], (std::set<std::string>{"harness/run", "oracle"}));
}

}  // namespace
