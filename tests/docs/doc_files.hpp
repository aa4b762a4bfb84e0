// The files the docs tests read, found by one walk of the source tree that skips what
// is not the project's own (.git, build trees, virtual environments).
#pragma once
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace rcts::docs_test {

namespace fs = std::filesystem;
inline const fs::path kRoot = RCTS_SOURCE_DIR;

inline std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Regular files below kRoot / `dir` (default: the whole tree) that `keep` accepts.
inline std::vector<fs::path> tree_files(const std::function<bool(const fs::path&)>& keep,
                                        const fs::path& dir = {}) {
  std::vector<fs::path> out;
  if (!fs::exists(kRoot / dir)) return out;
  for (auto it = fs::recursive_directory_iterator(kRoot / dir); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == ".git" || name.rfind("build", 0) == 0 || name == "venv")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && keep(it->path())) out.push_back(it->path());
  }
  return out;
}

// docs/*.md.
inline std::vector<fs::path> docs_pages() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kRoot / "docs"))
    if (e.path().extension() == ".md") out.push_back(e.path());
  return out;
}

}  // namespace rcts::docs_test
