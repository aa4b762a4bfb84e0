// Tensor dumps for cross-checking in numpy or PyTorch (`rcts run --dump DIR`, design §10).
// Each tensor becomes one .npy v1.0 file of its raw little-endian bytes; bf16 has no
// numpy dtype, so its bits are written as '<u2' and flagged in index.json (view them
// with `torch.from_numpy(a.view('<i2')).view(torch.bfloat16)` or
// `(a.astype('<u4') << 16).view('<f4')`).
#pragma once
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// Writes tensors of one run into a directory plus an index.json describing each file.
class DumpWriter {
 public:
  // Creates dir (and parents) if needed.
  explicit DumpWriter(std::filesystem::path dir);
  // Writes the index if finish() was not called (best effort: a case that threw
  // half-way still leaves a usable dump).
  ~DumpWriter();
  DumpWriter(const DumpWriter&) = delete;
  DumpWriter& operator=(const DumpWriter&) = delete;

  // role: input | param | mask | grad | output. tag: a micro-batch ("mb0") or any
  // label; may be empty. Returns the file name written (relative to dir).
  std::string add(const Tensor& t, const std::string& role, const std::string& tag);
  // Writes index.json. Further add() calls throw.
  void finish();

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  nlohmann::json entries_ = nlohmann::json::array();
  std::set<std::string> used_;
  bool finished_ = false;
};

// A file-name-safe form of s: [A-Za-z0-9._-] kept, anything else becomes '_'.
std::string safe_file_stem(const std::string& s);

}  // namespace rcts::harness
