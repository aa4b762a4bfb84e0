// Megatron-LM arguments are untrusted input: huge argument texts and
// names, YAML anchors and aliases, deep nesting, several documents and numbers beyond any
// integer are refused with a message naming the source, in bounded time and memory.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include "harness/megatron/megatron_args.hpp"
#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

using testing::ScratchDir;

const char* const kSizes = "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --micro-batch-size 1";

std::string import_error(const std::string& text) {
  try {
    import_megatron_arg_string(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string yaml_problems(const std::string& text) {
  std::vector<std::string> problems;
  megatron_args_from_yaml(text, "m.yaml", problems);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  return all.empty() ? "(no problem)" : all;
}

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// F10: an unknown name of a megabyte gets its "did you mean" in no time: the edit
// distance is not computed against names it cannot be near.
TEST(HostileMegatron, LongUnknownNameIsCheap) {
  const std::string name = "--" + std::string(1000000, 'x');
  std::string why;
  const double s = seconds_of([&] { why = import_error(std::string(kSizes) + " " + name); });
  EXPECT_LT(s, 0.5) << why.substr(0, 200);
  EXPECT_NE(why.find("unknown to rcts"), std::string::npos) << why.substr(0, 200);
}

// Huge argument lists and texts are refused by their size or count.
TEST(HostileMegatron, HugeArgumentListsAreRefused) {
  std::string many = kSizes;
  for (int i = 0; i < 5000; ++i) many += " --bf16";
  const std::string why = import_error(many);
  EXPECT_NE(why.find("arguments, more than the 4096"), std::string::npos) << why.substr(0, 300);
  const std::string why2 = import_error(std::string(kSizes) + " " + std::string(2 << 20, ' '));
  EXPECT_NE(why2.find("more than the 1048576 bytes"), std::string::npos) << why2.substr(0, 300);
}

// 27: numbers beyond any integer.
TEST(HostileMegatron, NumbersBeyondAnyIntegerAreRefused) {
  const std::string why = import_error(
      "--num-layers 99999999999999999999999999 --hidden-size 64 --num-attention-heads 4 --seq-length 16 "
      "--micro-batch-size 1");
  EXPECT_NE(why.find("--num-layers 99999999999999999999999999"), std::string::npos) << why;
}

// 27: anchors and aliases (a billion laughs), deep nesting and non-scalar keys.
TEST(HostileMegatron, YamlAnchorsDeepNestingAndOddKeysAreRefused) {
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    laughs += std::string(1, c) + ": &" + c + " [*" + char(c - 1) + ", *" + char(c - 1) + ", *" + char(c - 1) + "]\n";
  std::string why;
  const double s = seconds_of([&] { why = yaml_problems(laughs); });
  EXPECT_LT(s, 1.0);
  EXPECT_NE(why.find("m.yaml"), std::string::npos) << why;
  EXPECT_NE(why.find("anchors and aliases"), std::string::npos) << why;
  const std::string deep = "num_layers: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  why = yaml_problems(deep);
  EXPECT_NE(why.find("nested deeper than 16"), std::string::npos) << why.substr(0, 300);
  why = yaml_problems("? [a, b]\n: 1\n");
  EXPECT_NE(why.find("m.yaml"), std::string::npos) << why;
  EXPECT_NE(why.find("keys are plain names"), std::string::npos) << why;
}

// F13: a YAML file with several documents is refused, not half read.
TEST(HostileMegatron, MultiDocumentYamlIsRefused) {
  const std::string why = yaml_problems("num_layers: 2\n---\nhidden_size: 64\n");
  EXPECT_NE(why.find("2 YAML documents"), std::string::npos) << why;
}

// F10: only regular files of a bounded size are read.
TEST(HostileMegatron, FileMustBeRegularAndSmall) {
  ScratchDir dir;
  const auto big = dir.path() / "big.args";
  std::ofstream(big) << std::string(2 << 20, ' ');
  try {
    import_megatron_file(big.string());
    FAIL() << "a 2 MiB file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(big.string() + ": 2097152 bytes"), std::string::npos) << e.what();
  }
  try {
    import_megatron_file("/dev/null");
    FAIL() << "a device was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/null: not a regular file"), std::string::npos) << e.what();
  }
}

// F18: every YAML problem names the file, the line and the argument.
TEST(HostileMegatron, YamlProblemsNameTheFile) {
  const std::string why = yaml_problems("num_layers: [[1]]\nhidden_size: {a: 1}\n");
  EXPECT_NE(why.find("m.yaml (line 1): num_layers: list items must be plain values"), std::string::npos) << why;
  EXPECT_NE(why.find("m.yaml (line 2): hidden_size: expected a value"), std::string::npos) << why;
}

}  // namespace
}  // namespace rcts::harness
