// The dump reader as a parser of untrusted input: a tensor written in every layout
// .npy allows (C or Fortran order, each dtype descr and byte order, header versions
// and paddings, 0-d and zero-size shapes) reads back as exactly the values written or
// is refused naming the file and field; never as other values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/npy.hpp"
#include "tests/harness/test_tensors.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/dump_dir.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;
using test_support::read_manifest;
using test_support::write_manifest;

enum class Pad { numpy, none, wide, no_newline };

// A .npy file: magic, version `major`.0, the header length (2 bytes in 1.0, 4 in
// 2.0 and 3.0), `dict` padded as `pad` says, then `data`.
std::string npy_bytes(int major, const std::string& dict, Pad pad, const std::string& data) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t pre = 8 + len_bytes;
  std::string h = dict;
  switch (pad) {
    case Pad::numpy:  // spaces and a newline up to a multiple of 64, as numpy writes it
      while ((pre + h.size() + 1) % 64) h += ' ';
      h += '\n';
      break;
    case Pad::none:
      h += '\n';
      break;
    case Pad::wide:  // longer than it need be: data at byte 192
      while (pre + h.size() + 1 < 192) h += ' ';
      h += '\n';
      break;
    case Pad::no_newline:
      while ((pre + h.size()) % 64) h += ' ';
      break;
  }
  std::string raw("\x93NUMPY", 6);
  raw += static_cast<char>(major);
  raw += '\0';
  for (size_t i = 0; i < len_bytes; ++i) raw += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return raw + h + data;
}

std::string dict_of(const std::string& descr, bool fortran, const std::string& shape) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::string bytes_of(const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); }

// ---- read_npy: every layout the format allows -----------------------------------------

struct NpyRow {
  std::string label;
  int major;
  std::string dict;
  Pad pad;
  std::string data;
  // Accepted: the descr, order and shape read back (the data must be `data` exactly).
  std::string descr;
  bool fortran;
  Shape shape;
  std::string error;  // refused: the message after "read_npy <path>: "
};

TEST(NpyLayouts, EveryLayoutReadsBackExactlyOrIsRefused) {
  ScratchDir dir;
  const fs::path f = dir.path() / "t.npy";
  const std::string f8 = bytes_of("\x00\x00\x00\x00\x00\x00\xf0\x3f", 8);  // 1.0
  const std::string six4(24, '\x07');                                        // 6 f32 / 6 i32 / 3 i64 / 3 f64
  const std::vector<NpyRow> rows = {
      // Every dtype rcts reads, in the descr numpy writes for it.
      {"f64 1-d", 1, dict_of("<f8", false, "(3,)"), Pad::numpy, six4, "<f8", false, {3}, ""},
      {"f32 2-d", 1, dict_of("<f4", false, "(2, 3)"), Pad::numpy, six4, "<f4", false, {2, 3}, ""},
      {"bf16 bits", 1, dict_of("<u2", false, "(12,)"), Pad::numpy, six4, "<u2", false, {12}, ""},
      {"u8", 1, dict_of("|u1", false, "(4, 6)"), Pad::numpy, six4, "|u1", false, {4, 6}, ""},
      {"i32", 1, dict_of("<i4", false, "(6,)"), Pad::numpy, six4, "<i4", false, {6}, ""},
      {"i64", 1, dict_of("<i8", false, "(3, 1)"), Pad::numpy, six4, "<i8", false, {3, 1}, ""},
      // 0-d and zero-size shapes.
      {"0-d f64", 1, dict_of("<f8", false, "()"), Pad::numpy, f8, "<f8", false, {}, ""},
      {"zero rows", 1, dict_of("<f4", false, "(0, 4)"), Pad::numpy, "", "<f4", false, {0, 4}, ""},
      {"zero columns, Fortran", 1, dict_of("<f4", true, "(4, 0)"), Pad::numpy, "", "<f4", true, {4, 0}, ""},
      {"zero-size middle", 1, dict_of("|u1", false, "(3, 0, 2)"), Pad::numpy, "", "|u1", false, {3, 0, 2}, ""},
      // Fortran order is reported, never dropped: the caller decides.
      {"Fortran 2-d", 1, dict_of("<f4", true, "(2, 3)"), Pad::numpy, six4, "<f4", true, {2, 3}, ""},
      // Header versions and paddings.
      {"version 2.0", 2, dict_of("<f4", false, "(6,)"), Pad::numpy, six4, "<f4", false, {6}, ""},
      {"no padding", 1, dict_of("<f4", false, "(6,)"), Pad::none, six4, "<f4", false, {6}, ""},
      {"wide padding", 1, dict_of("<f4", false, "(6,)"), Pad::wide, six4, "<f4", false, {6}, ""},
      {"no newline", 1, dict_of("<f4", false, "(6,)"), Pad::no_newline, six4, "<f4", false, {6}, ""},
      {"keys reordered, double quotes", 1, "{\"shape\": (6,), \"descr\": \"<f4\", \"fortran_order\": False}", Pad::numpy,
       six4, "<f4", false, {6}, ""},
      // Descrs and byte orders rcts does not read.
      {"big-endian f4", 1, dict_of(">f4", false, "(6,)"), Pad::numpy, six4, "", false, {},
       "'descr' '>f4' is no dtype rcts reads"},
      {"native-order f4", 1, dict_of("=f4", false, "(6,)"), Pad::numpy, six4, "", false, {},
       "'descr' '=f4' is no dtype rcts reads"},
      {"no byte order", 1, dict_of("f4", false, "(6,)"), Pad::numpy, six4, "", false, {},
       "'descr' 'f4' is no dtype rcts reads"},
      {"big-endian u2", 1, dict_of(">u2", false, "(12,)"), Pad::numpy, six4, "", false, {},
       "'descr' '>u2' is no dtype rcts reads"},
      {"little-endian u1", 1, dict_of("<u1", false, "(24,)"), Pad::numpy, six4, "", false, {},
       "'descr' '<u1' is no dtype rcts reads"},
      {"f16", 1, dict_of("<f2", false, "(12,)"), Pad::numpy, six4, "", false, {}, "'descr' '<f2' is no dtype rcts reads"},
      {"bool", 1, dict_of("|b1", false, "(24,)"), Pad::numpy, six4, "", false, {}, "'descr' '|b1' is no dtype rcts reads"},
      {"complex", 1, dict_of("<c8", false, "(3,)"), Pad::numpy, six4, "", false, {}, "'descr' '<c8' is no dtype rcts reads"},
      {"bytes", 1, dict_of("|S4", false, "(6,)"), Pad::numpy, six4, "", false, {}, "'descr' '|S4' is no dtype rcts reads"},
      {"object", 1, dict_of("|O", false, "(3,)"), Pad::numpy, six4, "", false, {}, "'descr' '|O' is no dtype rcts reads"},
      // Sizes that disagree with the shape, and a version rcts does not read.
      {"short", 1, dict_of("<f4", false, "(7,)"), Pad::numpy, six4, "", false, {},
       "holds 24 data bytes, 'shape' [7] of '<f4' needs 28 (truncated)"},
      {"long", 1, dict_of("<f4", false, "(5,)"), Pad::numpy, six4, "", false, {},
       "holds 24 data bytes, 'shape' [5] of '<f4' needs 20"},
      {"0-d with no data", 1, dict_of("<f8", false, "()"), Pad::numpy, "", "", false, {},
       "holds 0 data bytes, 'shape' [] of '<f8' needs 8 (truncated)"},
      {"version 3.0", 3, dict_of("<f4", false, "(6,)"), Pad::numpy, six4, "", false, {},
       "unsupported .npy version 3"},
  };
  for (const auto& row : rows) {
    write_file(f, npy_bytes(row.major, row.dict, row.pad, row.data));
    std::string error;
    NpyFile got;
    try {
      got = read_npy(f);
    } catch (const Error& e) {
      error = e.message();
    }
    if (!row.error.empty()) {
      EXPECT_EQ(error, "read_npy " + f.string() + ": " + row.error) << row.label;
      continue;
    }
    ASSERT_EQ(error, "") << row.label;
    EXPECT_EQ(got.descr, row.descr) << row.label;
    EXPECT_EQ(got.fortran_order, row.fortran) << row.label;
    EXPECT_EQ(got.shape, row.shape) << row.label;
    EXPECT_EQ(bytes_of(got.data.data(), got.data.size()), row.data) << row.label;
  }
}

// ---- the dump reader: one tensor of a real dump in every layout ---------------------------

// (s*b, h) = (4 * 2, 16): not square, so a transposed file shows in its shape.
RunRecord small_run() { return test_support::run_cpu_recorded(test_support::dense({.layers = 1, .seq = 4, .ffn = 32})); }

// The bytes of a (rows, cols) tensor of `elem`-byte elements in column-major order.
std::string transposed(const std::string& c_order, int64_t rows, int64_t cols, size_t elem) {
  std::string f(c_order.size(), '\0');
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      std::memcpy(&f[(static_cast<size_t>(j * rows + i)) * elem], &c_order[(static_cast<size_t>(i * cols + j)) * elem], elem);
  return f;
}

std::string byteswapped(std::string s, size_t elem) {
  for (size_t i = 0; i + elem <= s.size(); i += elem) std::reverse(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(i + elem));
  return s;
}

struct DumpRow {
  std::string label;
  int major;
  std::string dict;
  Pad pad;
  std::string data;
  json shape;          // the manifest's shape (the writer's unless stated)
  std::string error;   // empty: read back as the dumped values; else the exact refusal
};

// /micro_batches/0/output of a one-layer run, (s*b, h) = (8, 16) bf16 stored as '<u2':
// each row rewrites its file and the manifest's shape and sha256 to agree with the file,
// so only the layout decides. An accepted layout must give the dumped values.
TEST(DumpLayouts, ATensorInEveryLayoutIsItsDumpedValuesOrRefused) {
  ScratchDir dir;
  const RunRecord run = small_run();
  test_support::write_baseline_dump(dir.path(), run);
  const json clean = read_manifest(dir.path());
  const std::string file = clean["micro_batches"][0]["output"]["file"];
  const fs::path path = dir.path() / file;
  const Tensor& out = run.outputs[0];
  ASSERT_EQ(out.shape(), (Shape{8, 16}));
  ASSERT_EQ(out.dtype(), DType::bf16);
  const std::string c = bytes_of(out.bytes(), static_cast<size_t>(out.nbytes()));
  const std::string f = transposed(c, 8, 16, 2);
  ASSERT_NE(c, f);
  const std::string manifest = (dir.path() / "dump.json").string();
  const std::string at_file = manifest + ": /micro_batches/0/output/file = \"" + file + "\": ";
  const std::string at_dtype = manifest + ": /micro_batches/0/output/dtype = \"bf16\": ";
  const std::string tensor = "tensor file " + path.string() + " ";
  const json rows_cols = {8, 16};
  const std::vector<DumpRow> rows = {
      {"as rcts writes it", 1, dict_of("<u2", false, "(8, 16)"), Pad::numpy, c, rows_cols, ""},
      {"version 2.0", 2, dict_of("<u2", false, "(8, 16)"), Pad::numpy, c, rows_cols, ""},
      {"no padding", 1, dict_of("<u2", false, "(8, 16)"), Pad::none, c, rows_cols, ""},
      {"wide padding", 1, dict_of("<u2", false, "(8, 16)"), Pad::wide, c, rows_cols, ""},
      {"no newline", 1, dict_of("<u2", false, "(8, 16)"), Pad::no_newline, c, rows_cols, ""},
      {"keys reordered", 1, "{'shape': (8, 16,), 'fortran_order': False, 'descr': '<u2'}", Pad::numpy, c, rows_cols, ""},
      // Fortran order: read as C order it would be the transposed tensor.
      {"Fortran order", 1, dict_of("<u2", true, "(8, 16)"), Pad::numpy, f, rows_cols,
       at_file + tensor + "is in Fortran order; dumps are C order"},
      {"Fortran flag on C bytes", 1, dict_of("<u2", true, "(8, 16)"), Pad::numpy, c, rows_cols,
       at_file + tensor + "is in Fortran order; dumps are C order"},
      {"big-endian bits", 1, dict_of(">u2", false, "(8, 16)"), Pad::numpy, byteswapped(c, 2), rows_cols,
       at_dtype + tensor + "holds '>u2', dtype bf16 is stored as '<u2'"},
      {"native order", 1, dict_of("=u2", false, "(8, 16)"), Pad::numpy, c, rows_cols,
       at_dtype + tensor + "holds '=u2', dtype bf16 is stored as '<u2'"},
      {"no byte order", 1, dict_of("u2", false, "(8, 16)"), Pad::numpy, c, rows_cols,
       at_dtype + tensor + "holds 'u2', dtype bf16 is stored as '<u2'"},
      {"i2 bits", 1, dict_of("<i2", false, "(8, 16)"), Pad::numpy, c, rows_cols,
       at_dtype + tensor + "holds '<i2', dtype bf16 is stored as '<u2'"},
      {"f16", 1, dict_of("<f2", false, "(8, 16)"), Pad::numpy, c, rows_cols,
       at_dtype + tensor + "holds '<f2', dtype bf16 is stored as '<u2'"},
      // Shapes: the file's must be the manifest's, and the manifest's the config's.
      {"file transposed shape", 1, dict_of("<u2", false, "(16, 8)"), Pad::numpy, f, rows_cols,
       manifest + ": /micro_batches/0/output/shape = [8,16]: " + tensor + "has shape [16, 8]"},
      {"flattened", 1, dict_of("<u2", false, "(128,)"), Pad::numpy, c, json::array({128}),
       "a bf16 [128] tensor; the config's activations are bf16 [8, 16] (s*b, h)"},
      {"version 3.0", 3, dict_of("<u2", false, "(8, 16)"), Pad::numpy, c, rows_cols,
       at_file + "read_npy " + path.string() + ": unsupported .npy version 3"},
  };
  for (const auto& row : rows) {
    json j = clean;
    json& t = j["micro_batches"][0]["output"];
    t["shape"] = row.shape;
    t["sha256"] = sha256_hex(row.data.data(), row.data.size());
    write_manifest(dir.path(), j);
    write_file(path, npy_bytes(row.major, row.dict, row.pad, row.data));
    std::string error;
    DumpedRun d;
    try {
      d = read_dump(dir.path());
    } catch (const Error& e) {
      error = e.message();
    }
    if (row.label == "flattened") {  // refused at the entry, shown as JSON cut at 80 characters
      std::string shown = t.dump();
      if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
      EXPECT_EQ(error, manifest + ": /micro_batches/0/output = " + shown + ": " + row.error);
      continue;
    }
    if (!row.error.empty()) {
      EXPECT_EQ(error, row.error) << row.label;
      continue;
    }
    ASSERT_EQ(error, "") << row.label;
    const Tensor& got = d.record.outputs.at(0);
    EXPECT_EQ(got.shape(), (Shape{8, 16})) << row.label;
    EXPECT_EQ(got.dtype(), DType::bf16) << row.label;
    EXPECT_EQ(bytes_of(got.bytes(), static_cast<size_t>(got.nbytes())), c) << row.label;
  }
}

}  // namespace
}  // namespace rcts::harness
