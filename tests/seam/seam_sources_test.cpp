// The backend seam, checked on the sources (design §11): nothing under reference/
// includes a kernel library header or names a kernel namespace (one exact-tier header,
// FP8 emulation, in one file: the exception of design §11), and the modules keep
// no arithmetic machinery of their own (no OpenMP loops, no raw byte copies, no libm
// calls, no mention of a kernel library at all). The scan reads the tree it was built
// from; a violation names file, line and text.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#ifndef RCTS_SOURCE_DIR
#error "RCTS_SOURCE_DIR must name the source tree"
#endif

namespace {

namespace fs = std::filesystem;

// Every line of the C++ sources below `dir` that matches `pattern`, as "file:line: text".
std::vector<std::string> matches(const fs::path& dir, const std::regex& pattern) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, pattern)) out.push_back(e.path().string() + ":" + std::to_string(n) + ": " + line);
  }
  return out;
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

const fs::path kRoot = RCTS_SOURCE_DIR;
// A kernel library reached directly.
const std::regex kKernelUse(R"(#\s*include\s*["<]kernels/(cpu|cuda)/|\b(cpu|cuda)::)");
// What the modules leave to the backend (sqrt and division are IEEE and allowed).
const std::regex kModuleMachinery(R"(kernels/cpu|kernels/cuda|#\s*pragma\s+omp|std::mem(cpy|set|move)|)"
                                  R"(std::(exp|log|tanh|erf|pow|sin|cos)\b)");

TEST(SeamSources, NothingInTheReferenceIncludesAKernelLibrary) {
  const auto bad = matches(kRoot / "reference", kKernelUse);
  EXPECT_TRUE(bad.empty()) << "the reference reaches a kernel library around the backend interface:" << listed(bad);
}

// The one exception above the seam (design §11): FP8 emulation, run on the host by the
// reference's delayed scaling. Any other exact-tier include under reference/ fails, and
// so does this one moving to another file.
const std::regex kExactUse(R"(#\s*include\s*["<]kernels/exact/)");
const std::string kFp8Exception = "reference/runtime/fp8.cpp:";

std::vector<std::string> exact_uses_beyond_fp8(const std::vector<std::string>& uses) {
  std::vector<std::string> out;
  for (const auto& u : uses) {
    const auto at = u.find(kFp8Exception);
    const bool allowed = at != std::string::npos && (at == 0 || u[at - 1] == '/') &&
                         u.find("\"kernels/exact/fp8.hpp\"") != std::string::npos;
    if (!allowed) out.push_back(u);
  }
  return out;
}

TEST(SeamSources, OnlyTheFp8ScalingIncludesAnExactBody) {
  const auto uses = matches(kRoot / "reference", kExactUse);
  EXPECT_EQ(uses.size(), 1u) << "the FP8 exception moved or went away:" << listed(uses);
  const auto bad = exact_uses_beyond_fp8(uses);
  EXPECT_TRUE(bad.empty()) << "the reference reaches an exact-tier body around the backend interface:" << listed(bad);
}

TEST(SeamSources, ModulesNameNoKernelLibraryAndKeepNoArithmeticMachinery) {
  const auto bad = matches(kRoot / "reference" / "modules", kModuleMachinery);
  EXPECT_TRUE(bad.empty()) << "modules do arithmetic or data movement that belongs to the backend:" << listed(bad);
}

// The scan must be able to fail: its patterns catch what they are meant to.
TEST(SeamSources, PatternsCatchTheirTargets) {
  EXPECT_TRUE(std::regex_search("#include \"kernels/cpu/gemm.hpp\"", kKernelUse));
  EXPECT_TRUE(std::regex_search("  cpu::gemm<T>(...)", kKernelUse));
  EXPECT_FALSE(std::regex_search("#include \"kernels/common/bf16.hpp\"", kKernelUse));
  EXPECT_TRUE(std::regex_search("#pragma omp parallel for", kModuleMachinery));
  EXPECT_TRUE(std::regex_search("std::memcpy(dst, src, n);", kModuleMachinery));
  EXPECT_TRUE(std::regex_search("y = std::tanh(x);", kModuleMachinery));
  EXPECT_TRUE(std::regex_search("// see kernels/cpu/gemm.hpp", kModuleMachinery));
  EXPECT_FALSE(std::regex_search("1.0 / std::sqrt(d)", kModuleMachinery));
  EXPECT_TRUE(std::regex_search("#include \"kernels/exact/norm.hpp\"", kExactUse));
  const std::vector<std::string> uses = {
      "/src/reference/runtime/fp8.cpp:4: #include \"kernels/exact/fp8.hpp\"",      // the exception
      "/src/reference/runtime/fp8.cpp:5: #include \"kernels/exact/norm.hpp\"",     // another body
      "/src/reference/modules/linear.cpp:9: #include \"kernels/exact/fp8.hpp\"",   // another file
      "/src/reference/runtime/xfp8.cpp:3: #include \"kernels/exact/fp8.hpp\""};    // a look-alike
  EXPECT_EQ(exact_uses_beyond_fp8(uses), std::vector<std::string>(uses.begin() + 1, uses.end()));
}

}  // namespace
