// The PTX scan of the exact tier (design §2): every float operation in the device code
// must be correctly rounded and unfused. Reads PTX files and reports, per function,
// approximate (.approx), flush-to-zero (.ftz) and fused (fma/mad on floats)
// instructions; fused ones are allowed only in functions whose (mangled) name matches
// --allow-fma (the GEMM, whose documented order is a chain of FMAs).
//   rcts_ptx_scan [--allow-fma REGEX] [--expect-violations] FILE.ptx...
// Exit 0 when clean (or, with --expect-violations, when something was found: the
// negative control that proves the scan sees what it looks for).
#include <fstream>
#include <iostream>
#include <regex>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::regex allow_fma("$^");  // matches nothing
  bool expect_violations = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--allow-fma" && i + 1 < argc) allow_fma = std::regex(argv[++i]);
    else if (a == "--expect-violations") expect_violations = true;
    else files.push_back(a);
  }
  if (files.empty()) {
    std::cerr << "usage: rcts_ptx_scan [--allow-fma REGEX] [--expect-violations] FILE.ptx...\n";
    return 2;
  }
  const std::regex function(R"(^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z0-9_$]+))");
  const std::regex inexact(R"(\.approx|\.ftz)");
  const std::regex fused(R"(\b(fma|mad)(\.rn)?\.f(16|32|64)\b)");
  int violations = 0, functions = 0, allowed_fma = 0;
  for (const auto& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::cerr << file << ": cannot open\n";
      return 2;
    }
    std::string line, current = "(file scope)";
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (std::regex_search(line, m, function)) {
        current = m[1];
        ++functions;
      }
      const bool bad_round = std::regex_search(line, inexact);
      const bool is_fused = std::regex_search(line, fused);
      if (is_fused && std::regex_search(current, allow_fma)) {
        ++allowed_fma;
        continue;
      }
      if (bad_round || is_fused) {
        if (++violations <= 10) std::cerr << file << ":" << n << " in " << current << ":" << line << "\n";
      }
    }
  }
  std::cout << "ptx scan: " << functions << " functions, " << violations << " forbidden instructions, " << allowed_fma
            << " FMAs in allowed functions\n";
  if (expect_violations) return violations > 0 ? 0 : 1;
  return violations == 0 ? 0 : 1;
}
