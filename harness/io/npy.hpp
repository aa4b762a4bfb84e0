// .npy v1.0 files of tensors' raw little-endian bytes, as dumps hold them
// (docs/dump-format.md, dump_v1.hpp). bf16 has no numpy dtype, so its bits are written
// as '<u2' (view them with `torch.from_numpy(a.view('<i2')).view(torch.bfloat16)` or
// `(a.astype('<u4') << 16).view('<f4')`).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

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

// Reads a .npy v1.0/v2.0 file of the simple kind write_npy produces.
// Throws rcts::Error naming the path and what is wrong.
NpyFile read_npy(const std::filesystem::path& path);

// A file-name-safe form of s: [A-Za-z0-9._-] kept, anything else becomes '_'.
std::string safe_file_stem(const std::string& s);

}  // namespace rcts::harness
