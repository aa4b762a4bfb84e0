// Corpus replay without clang: runs the fuzz entry (with --dump first: the dump
// reader's) over every regular file under the given files and directories (the case
// set, example configs, hostile seeds). Fails
// when an input escapes with anything but rcts::Error (a crash fails it too), or
// when there is nothing to replay.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "tests/fuzz/fuzz_entry.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  // --dump: the dump reader's entry (parse_dump_input) instead of the parse entry.
  const bool dump = argc > 1 && std::string(argv[1]) == "--dump";
  std::vector<fs::path> files;
  for (int i = dump ? 2 : 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(argv[i])) {
      files.push_back(argv[i]);
    } else {
      std::cerr << argv[i] << ": no such file or directory\n";
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << "nothing to replay\n";
    return 1;
  }
  int bad = 0;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    try {
      if (dump) rcts::fuzz::parse_dump_input(text.str());
      else rcts::fuzz::parse_input(text.str());
    } catch (const std::exception& e) {
      std::cerr << f.string() << ": escaped the parser: " << e.what() << "\n";
      ++bad;
    } catch (...) {
      std::cerr << f.string() << ": escaped the parser with a non-std exception\n";
      ++bad;
    }
  }
  std::cout << "replayed " << files.size() << " inputs, " << bad << " escaped\n";
  return bad == 0 ? 0 : 1;
}
