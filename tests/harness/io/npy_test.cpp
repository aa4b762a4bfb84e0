// .npy writer/reader round trip and header layout.
#include "harness/io/npy.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "harness/io/digest.hpp"
#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

using testing::ScratchDir;
using testing::tensor_of;

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Npy, HeaderLayout) {
  ScratchDir dir;
  const Tensor t = tensor_of<float>({2, 3}, {1, 2, 3, 4, 5, 6}, "x");
  write_npy(dir.path() / "x.npy", t);
  const std::string raw = read_all(dir.path() / "x.npy");
  ASSERT_GE(raw.size(), 10u);
  EXPECT_EQ(raw.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(raw[6], 1);
  EXPECT_EQ(raw[7], 0);
  const size_t header_len = static_cast<unsigned char>(raw[8]) | static_cast<unsigned char>(raw[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);  // data aligned as numpy writes it
  const std::string dict = raw.substr(10, header_len);
  EXPECT_EQ(dict.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u) << dict;
  EXPECT_EQ(dict.back(), '\n');
  ASSERT_EQ(raw.size(), 10 + header_len + 24);
  EXPECT_EQ(std::memcmp(raw.data() + 10 + header_len, t.bytes(), 24), 0);
}

TEST(Npy, RoundTripEveryDtype) {
  ScratchDir dir;
  const std::vector<Tensor> tensors{
      tensor_of<double>({2}, {0.1, -2.0}, "f64"),
      tensor_of<float>({1, 1, 3}, {1.5f, -0.0f, 7.0f}, "f32"),
      tensor_of<bf16>({3}, {bf16{0x3f80}, bf16{0xffff}, bf16{0x0001}}, "bf16"),
      tensor_of<uint8_t>({2, 2}, {0, 1, 255, 7}, "u8"),
      tensor_of<int32_t>({1}, {-5}, "i32"),
      tensor_of<int64_t>({}, {int64_t{1} << 40}, "i64_scalar"),
      tensor_of<float>({0, 4}, {}, "empty"),
  };
  for (const Tensor& t : tensors) {
    const auto path = dir.path() / (t.name() + ".npy");
    write_npy(path, t);
    const NpyFile f = read_npy(path);
    EXPECT_EQ(f.descr, dtype_numpy(t.dtype())) << t.name();
    EXPECT_FALSE(f.fortran_order);
    EXPECT_EQ(f.shape, t.shape()) << t.name();
    ASSERT_EQ(static_cast<int64_t>(f.data.size()), t.nbytes()) << t.name();
    if (t.nbytes()) {
      EXPECT_EQ(std::memcmp(f.data.data(), t.bytes(), f.data.size()), 0) << t.name();
    }
  }
}

TEST(Npy, ReadRejectsNonNpy) {
  ScratchDir dir;
  std::ofstream(dir.path() / "bad.npy") << "not numpy";
  EXPECT_THROW(read_npy(dir.path() / "bad.npy"), Error);
  EXPECT_THROW(read_npy(dir.path() / "missing.npy"), Error);
}

// The examples the kit's tests read too (tests/adapter/kit_unit_test.py): one rule for
// dump directories, .npy files and rcts expect's skip markers.
TEST(SafeFileStem, TheSharedExamples) {
  const auto j = nlohmann::json::parse(std::ifstream(std::filesystem::path(RCTS_SOURCE_DIR) / "tests/support/file_names.json"));
  ASSERT_GE(j.at("examples").size(), 10u);
  for (const auto& e : j.at("examples")) {
    EXPECT_EQ(safe_file_stem(e.at(0).get<std::string>()), e.at(1).get<std::string>()) << e.at(0);
  }
}

// Optional cross-check with numpy itself.
TEST(Npy, LoadsInNumpy) {
  // Debian's python3-numpy lives under /usr/bin/python3; a pyenv python3 earlier on
  // PATH may lack it.
  std::string python = "python3";
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0) python = "/usr/bin/python3";
  else if (std::system("python3 -c 'import numpy' >/dev/null 2>&1") != 0) GTEST_SKIP() << "python3 with numpy not available";
  ScratchDir dir;
  write_npy(dir.path() / "a.npy", tensor_of<float>({2, 3}, {1, 2, 3, 4, 5, 6.5f}, "a"));
  write_npy(dir.path() / "h.npy", tensor_of<bf16>({2}, {bf16{0x3f80}, bf16{0xc000}}, "h"));
  const std::string py =
      "import numpy as np, sys; d = sys.argv[1]; a = np.load(d + '/a.npy'); "
      "assert a.dtype == np.float32 and a.shape == (2, 3) and a[1, 2] == 6.5, a; "
      "h = (np.load(d + '/h.npy').astype('<u4') << 16).view('<f4'); "
      "assert list(h) == [1.0, -2.0], h";
  const std::string cmd = python + " -c \"" + py + "\" '" + dir.path().string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace rcts::harness
