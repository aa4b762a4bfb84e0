// Dumps written by other programs are untrusted: tensor files that
// leave the dump, npy headers that lie about their shape or size, overflowing shapes
// and headers numpy itself would refuse are each refused naming the file and the
// field, before a tensor byte is allocated or read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "harness/dumps/dump_v1.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/npy.hpp"
#include "tests/harness/test_tensors.hpp"
#include "tests/support/dump_dir.hpp"
#include "tests/support/dump_source.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;
using test_support::read_dump_error;
using test_support::read_manifest;
using test_support::write_manifest;

// A clean dump of a one-layer run of one micro-batch in `dir`.
void clean_dump(const fs::path& dir) { test_support::write_baseline_dump(dir, test_support::dump_run(1)); }

std::string npy_error(const fs::path& file) {
  try {
    read_npy(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "(read_npy accepted the file)";
}

// A .npy file with this header dict (padded as numpy pads it) and `data` after it.
void write_raw_npy(const fs::path& file, const std::string& dict, const std::string& data = "") {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string raw("\x93NUMPY\x01\x00", 8);
  raw += static_cast<char>(h.size() & 0xff);
  raw += static_cast<char>(h.size() >> 8);
  std::ofstream(file, std::ios::binary) << raw << h << data;
}

// A sanitizer's shadow memory reserves terabytes of address space, so RLIMIT_AS cannot
// bound a sanitized reader; there the refusal is still checked, the bound only in the
// plain build.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCanLimitAddressSpace = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kCanLimitAddressSpace = false;
#else
constexpr bool kCanLimitAddressSpace = true;
#endif
#else
constexpr bool kCanLimitAddressSpace = true;
#endif

// F1: a tensor file whose size disagrees with its manifest is refused from its size,
// before its bytes are read: a 64 GiB sparse file read under a 2 GiB address-space limit.
TEST(HostileDump, OversizedTensorFileIsRefusedBeforeItIsRead) {
  ScratchDir dir;
  clean_dump(dir.path());
  const std::string file = read_manifest(dir.path())["micro_batches"][0]["output"]["file"];
  const fs::path path = dir.path() / file;
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{64} << 30), 0);
  ::close(fd);
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(pipefd[0]);
    if (kCanLimitAddressSpace) {
      rlimit lim{size_t{2} << 30, size_t{2} << 30};
      ::setrlimit(RLIMIT_AS, &lim);
    }
    ::alarm(60);
    std::string why;
    try {
      read_dump(dir.path());
      why = "(accepted)";
    } catch (const Error& e) {
      why = e.what();
    } catch (const std::exception& e) {
      why = std::string("non-rcts exception: ") + e.what();
    }
    [[maybe_unused]] auto n = ::write(pipefd[1], why.data(), why.size());
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string why;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the reader died (signal " << WTERMSIG(status) << ")";
  EXPECT_NE(why.find("/micro_batches/0/output/file"), std::string::npos) << why;
  EXPECT_NE(why.find(file), std::string::npos) << why;
  EXPECT_NE(why.find("data bytes"), std::string::npos) << why;
}

// F2: a tensor file that is a symlink out of the dump directory.
TEST(HostileDump, SymlinkOutOfTheDumpIsRefused) {
  ScratchDir dir;
  const fs::path d = dir.path() / "dump";
  clean_dump(d);
  const std::string file = read_manifest(d)["micro_batches"][0]["output"]["file"];
  fs::rename(d / file, dir.path() / "outside.npy");
  fs::create_symlink(dir.path() / "outside.npy", d / file);
  const std::string why = read_dump_error(d);
  EXPECT_NE(why.find("/micro_batches/0/output/file"), std::string::npos) << why;
  EXPECT_NE(why.find("outside the dump"), std::string::npos) << why;
  // A link inside the dump to another of its files is fine.
  fs::remove(d / file);
  fs::rename(dir.path() / "outside.npy", d / "real.npy");
  fs::create_symlink("real.npy", d / file);
  EXPECT_EQ(read_dump_error(d), "(read_dump accepted the dump)");
  // The manifest itself may not lead out either.
  fs::rename(d / "dump.json", dir.path() / "dump.json");
  fs::create_symlink(dir.path() / "dump.json", d / "dump.json");
  const std::string why2 = read_dump_error(d);
  EXPECT_NE(why2.find("outside the dump"), std::string::npos) << why2;
}

// F4: a shape whose element count overflows int64 (2^32 x 2^32 elements wraps to 0) is
// refused at the manifest's /shape, not read as an empty mask that passes.
TEST(HostileDump, OverflowingShapeIsRefused) {
  ScratchDir dir;
  clean_dump(dir.path());
  json j = read_manifest(dir.path());
  json& t = j["masks"][0]["mask"];
  t["shape"] = {int64_t{1} << 32, int64_t{1} << 32};
  t["sha256"] = sha256_hex(nullptr, 0);
  write_raw_npy(dir.path() / t["file"].get<std::string>(),
                "{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296, 4294967296), }");
  write_manifest(dir.path(), j);
  const std::string why = read_dump_error(dir.path());
  EXPECT_NE(why.find("/masks/0/mask/shape"), std::string::npos) << why;
  EXPECT_NE(why.find("bytes a dumped tensor may have"), std::string::npos) << why;
  // Too many dimensions.
  t["shape"] = json(std::vector<int>(40, 1));
  write_manifest(dir.path(), j);
  const std::string why2 = read_dump_error(dir.path());
  EXPECT_NE(why2.find("/masks/0/mask/shape"), std::string::npos) << why2;
  EXPECT_NE(why2.find("40 dimensions, more than the 32"), std::string::npos) << why2;
}

// F7: headers numpy refuses are refused too, naming the file and the header field;
// a 20-digit dimension is no bare "stoll".
TEST(HostileDump, NpyHeaderIsReadAsStrictlyAsNumpyReadsIt) {
  ScratchDir dir;
  const fs::path f = dir.path() / "x.npy";
  const std::string four(16, '\0');
  struct Bad {
    std::string dict, field;
  };
  const std::vector<Bad> bad = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 2), }", "'shape'"},        // (2 2) is no tuple
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", "'shape'"},          // (4) is an int
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,,2), }", "'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4L,), }", "'shape'"},        // Python 2 only
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (4,), }", "'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'extra': 1, }", "'extra'"},
      {"{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", "'descr'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (4,), }", "'descr'"},
      {"{'descr': '<f4', 'fortran_order': False}", "'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } trailing", "header"},
  };
  for (const auto& b : bad) {
    write_raw_npy(f, b.dict, four);
    const std::string why = npy_error(f);
    EXPECT_NE(why.find(f.string()), std::string::npos) << b.dict << "\n" << why;
    EXPECT_NE(why.find(b.field), std::string::npos) << b.dict << "\n" << why;
  }
  // What numpy writes, and what it accepts.
  for (const std::string ok : {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                               "{\"shape\": (2, 2), \"fortran_order\": False, \"descr\": \"<f4\"}",
                               "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, ), }"}) {
    write_raw_npy(f, ok, four);
    EXPECT_EQ(npy_error(f), "(read_npy accepted the file)") << ok;
  }
}

// Truncated tensor files and a header claiming more bytes than the file has.
TEST(HostileDump, TruncatedFilesAreRefusedNamingTheFile) {
  ScratchDir dir;
  const fs::path f = dir.path() / "t.npy";
  std::ofstream(f, std::ios::binary) << std::string("\x93NUMPY\x01\x00\xff\xff{", 11);
  std::string why = npy_error(f);
  EXPECT_NE(why.find(f.string()), std::string::npos) << why;
  EXPECT_NE(why.find("header"), std::string::npos) << why;
  std::ofstream(f, std::ios::binary) << std::string("\x93NUM", 4);
  why = npy_error(f);
  EXPECT_NE(why.find("not a .npy file"), std::string::npos) << why;
}

// F6: a dump fed another input (its manifest and sha256 consistent) is not a run of the
// case: the check refuses it at the input, naming the file.
TEST(HostileDump, InputsAndTargetsMustBeTheCasesData) {
  ScratchDir dir;
  const RunRecord& run = test_support::dump_run(1);
  for (const std::string what : {"input", "target"}) {
    const fs::path d = dir.path() / what;
    test_support::write_baseline_dump(d, run);
    json j = read_manifest(d);
    json& t = j["micro_batches"][0][what];
    Tensor x = (what == "input" ? run.inputs[0] : run.targets[0]).clone(host_placement());
    x.bytes()[0] ^= std::byte{1};
    test_support::put_tensor(d, t, x);
    write_manifest(d, j);
    const std::string why = test_support::dump_check_error(d, run.config);
    EXPECT_NE(why.find("/micro_batches/0/" + what + ": not the " + what + " rcts feeds"), std::string::npos) << why;
  }
}

// F6: a mask whose shape is not its layout's (an attention mask flattened) is refused.
TEST(HostileDump, MaskShapesFollowTheirLayout) {
  ScratchDir dir;
  clean_dump(dir.path());
  json j = read_manifest(dir.path());
  size_t k = 0;
  while (j["masks"][k]["kind"] != "attention") ++k;
  json& t = j["masks"][k]["mask"];
  const fs::path file = dir.path() / t["file"].get<std::string>();
  const NpyFile f = read_npy(file);
  const int64_t n = static_cast<int64_t>(f.data.size());
  Tensor flat = Tensor::empty({n}, DType::u8, host_placement(), "flat");
  flat.write_from_host(f.data.data());
  test_support::put_tensor(dir.path(), t, flat);  // the same bytes, now of shape [n]
  write_manifest(dir.path(), j);
  const std::string why = read_dump_error(dir.path());
  EXPECT_NE(why.find("/masks/" + std::to_string(k) + "/mask/shape"), std::string::npos) << why;
  EXPECT_NE(why.find("(b, heads / tp, s, s)"), std::string::npos) << why;
}

}  // namespace
}  // namespace rcts::harness
