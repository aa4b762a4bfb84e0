// .npy v1.0 files of tensors' raw little-endian bytes, as dumps hold them
// (docs/dump-format.md, dump_v1.hpp). bf16 has no numpy dtype, so its bits are written
// as '<u2' (view them with `torch.from_numpy(a.view('<i2')).view(torch.bfloat16)` or
// `(a.astype('<u4') << 16).view('<f4')`).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/io/safe_name.hpp"  // the names of .npy files
#include "reference/core/tensor.hpp"

namespace rcts::harness {

// Writes t (row-major, C order) as .npy v1.0. Throws rcts::Error naming the path.
void write_npy(const std::filesystem::path& path, const Tensor& t);

// What a .npy file holds, as read back by read_npy.
struct NpyFile {
  std::string descr;  // e.g. "<f4"
  bool fortran_order = false;
  Shape shape;
  std::vector<std::byte> data;
};

// A .npy file's header, read and checked without touching its data.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
  uint64_t data_offset = 0;  // where the data starts
  uint64_t data_bytes = 0;   // what the file holds after the header
};

// Reads the header of a .npy v1.0/v2.0 file as strictly as numpy reads it: a dict of
// exactly 'descr' (a string), 'fortran_order' (True or False) and 'shape' (a tuple of
// non-negative integers), at most limits::kMaxNpyHeaderBytes long. Throws rcts::Error
// naming the path and the header field.
NpyHeader read_npy_header(const std::filesystem::path& path);
// The same checks on a header dict's text alone (data_offset and data_bytes stay 0).
NpyHeader parse_npy_header_dict(std::string_view dict, const std::string& where);

// Reads header and data; the data size must be the shape's (checked before reading)
// and at most `max_data_bytes`. Throws rcts::Error naming the path and what is wrong.
NpyFile read_npy(const std::filesystem::path& path, uint64_t max_data_bytes = UINT64_MAX);

// The bytes of `shape` elements of `elem` bytes each; nullopt when it overflows or
// exceeds `limit`.
std::optional<uint64_t> shape_bytes(const Shape& shape, uint64_t elem, uint64_t limit);

}  // namespace rcts::harness
