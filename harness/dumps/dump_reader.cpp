// Reader: the strict primitives of dump_read*.cpp, and a tensor file read as untrusted
// input (docs/dump-format.md, "Checks over dumps": what is refused before a byte is read).
#include "harness/dumps/dump_reader.hpp"

#include <algorithm>
#include <fstream>
#include <limits>

#include "harness/io/digest.hpp"
#include "harness/io/npy.hpp"
#include "reference/config/limits.hpp"

namespace rcts::harness::dump_detail {

namespace fs = std::filesystem;

namespace {

// A tensor file is read and hashed in pieces of this size.
constexpr uint64_t kReadChunkBytes = uint64_t{1} << 20;

}  // namespace

JsonReader Reader::need(const JsonReader& r, const char* key) const {
  if (!r.json().is_object()) r.fail("expected an object");
  if (!r.has(key)) r.fail("missing field '" + std::string(key) + "'");
  return r.at(key);
}

uint64_t Reader::u64(const JsonReader& r) const {
  if (!r.json().is_number_unsigned() && !(r.json().is_number_integer() && r.json().get<int64_t>() >= 0))
    r.fail("expected a non-negative integer");
  return r.json().get<uint64_t>();
}

int64_t Reader::i64(const JsonReader& r, int64_t lo) const {
  return r.integer(lo, std::numeric_limits<int64_t>::max());
}

Tensor Reader::tensor(const JsonReader& r, const std::string& name) const {
  r.expect_object({"file", "dtype", "shape", "sha256", "name", "megatron_name"});
  const std::string file = need(r, "file").str();
  if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file[0] == '.')
    r.at("file").fail("a tensor file is a plain file name inside the dump directory");
  DType dtype;
  try {
    dtype = parse_dtype(need(r, "dtype").str());
  } catch (const Error& e) {
    r.at("dtype").fail(e.message());
  }
  const JsonReader sr = need(r, "shape");
  if (sr.array_size() > static_cast<size_t>(limits::kMaxTensorDims))
    sr.fail(std::to_string(sr.array_size()) + " dimensions, more than the " +
            std::to_string(limits::kMaxTensorDims) + " a tensor may have");
  Shape shape;
  for (size_t i = 0; i < sr.array_size(); ++i) shape.push_back(i64(sr.at(i)));
  const auto want = shape_bytes(shape, dtype_size(dtype), static_cast<uint64_t>(limits::kMaxDumpTensorBytes));
  if (!want)
    sr.fail("a " + std::string(dtype_name(dtype)) + " tensor of this shape needs more than the " +
            std::to_string(limits::kMaxDumpTensorBytes) + " bytes a dumped tensor may have");
  const std::string sha = need(r, "sha256").str();
  const fs::path path = dir_ / file;
  const std::string where = "tensor file " + path.string() + " ";
  if (const auto out = outside_the_dump(path)) r.at("file").fail(where + *out);
  if (std::error_code ec; !fs::is_regular_file(path, ec))
    r.at("file").fail(where + (fs::exists(fs::symlink_status(path, ec)) ? "is not a regular file (a FIFO, socket, device or directory)"
                                                                       : "does not exist"));
  NpyHeader h;
  try {
    h = read_npy_header(path);
  } catch (const Error& e) {
    r.at("file").fail(e.message());
  }
  if (h.descr != dtype_numpy(dtype))
    r.at("dtype").fail(where + "holds '" + h.descr + "', dtype " + std::string(dtype_name(dtype)) + " is stored as '" +
                       std::string(dtype_numpy(dtype)) + "'");
  if (h.fortran_order) r.at("file").fail(where + "is in Fortran order; dumps are C order");
  if (h.shape != shape) r.at("shape").fail(where + "has shape " + shape_str(h.shape));
  if (h.data_bytes != *want)  // from the file's size, before a byte of it is read
    r.at("file").fail(where + "holds " + std::to_string(h.data_bytes) + " data bytes, shape " + shape_str(shape) +
                      " of " + std::string(dtype_name(dtype)) + " needs " + std::to_string(*want) +
                      (h.data_bytes < *want ? " (truncated)" : ""));
  // Straight into the tensor, hashed chunk by chunk: the file is held once, not twice.
  Tensor t = Tensor::empty(shape, dtype, host_placement(), name);
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  if (!in) r.at("file").fail(where + "cannot be read");
  Sha256 hash;
  std::byte* into = t.numel() ? t.bytes() : nullptr;
  for (uint64_t at = 0; at < *want;) {
    const uint64_t n = std::min<uint64_t>(kReadChunkBytes, *want - at);
    in.read(reinterpret_cast<char*>(into + at), static_cast<std::streamsize>(n));
    if (static_cast<uint64_t>(in.gcount()) != n) r.at("file").fail(where + "changed size while being read");
    hash.update(into + at, static_cast<size_t>(n));
    at += n;
  }
  const std::string got = hash.hex();
  if (got != sha) r.at("sha256").fail(where + "has sha256 " + got + " (changed after the manifest was written)");
  return t;
}

std::optional<std::string> Reader::outside_the_dump(const fs::path& path) const {
  std::error_code ec;
  if (!fs::is_symlink(path, ec)) return std::nullopt;
  const fs::path real = fs::weakly_canonical(path, ec);
  if (ec) {  // a loop of links, or one too long to follow: name where it points
    std::error_code e2;
    return "is a symbolic link to '" + fs::read_symlink(path, e2).string() + "' that cannot be resolved (" +
           ec.message() + ")";
  }
  const fs::path root = fs::weakly_canonical(dir_, ec);
  const auto [r, p] = std::mismatch(root.begin(), root.end(), real.begin(), real.end());
  if (!ec && r == root.end() && p != real.end()) return std::nullopt;
  return "is a symbolic link to " + real.string() + ", outside the dump directory " + root.string();
}

std::vector<NamedTensor> Reader::named(const JsonReader& r) const {
  std::vector<NamedTensor> out;
  for (size_t i = 0; i < r.array_size(); ++i) {
    const JsonReader e = r.at(i);
    const std::string name = need(e, "name").str();
    out.push_back({name, tensor(e, name)});
  }
  return out;
}

GeneratorState Reader::state(const JsonReader& r) const {
  r.expect_object({"seed", "offset"});
  return {u64(need(r, "seed")), u64(need(r, "offset"))};
}

RngStates Reader::states(const JsonReader& r) const {
  r.expect_object({"host", "device", "tracker", "active_forks"});
  RngStates s;
  s.host = state(need(r, "host"));
  s.device = state(need(r, "device"));
  const JsonReader t = need(r, "tracker");
  if (!t.json().is_object()) t.fail("expected an object mapping stream names to {seed, offset}");
  for (const auto& [name, v] : t.json().items()) s.tracker[name] = state(JsonReader(t.file(), v, t.path() + "/" + name));
  if (r.has("active_forks")) {
    const JsonReader a = r.at("active_forks");
    for (size_t i = 0; i < a.array_size(); ++i) s.active_forks.push_back(a.at(i).str());
  }
  return s;
}

std::map<std::string, std::string> Reader::opaque_states(const JsonReader& r) const {
  r.expect_object({"opaque"});
  const JsonReader o = need(r, "opaque");
  if (!o.json().is_object() || o.json().empty()) o.fail("expected an object mapping generator names to sha256 hex");
  std::map<std::string, std::string> out;
  for (const auto& [name, v] : o.json().items()) out[name] = JsonReader(o.file(), v, o.path() + "/" + name).str();
  return out;
}

void check_names_match(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want,
                       const JsonReader& where, const std::string& against) {
  if (got.size() != want.size())
    where.fail(std::to_string(got.size()) + " tensors, " + against + " has " + std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i].name != want[i].name)
      where.at(i).fail("named '" + got[i].name + "', " + against + " has '" + want[i].name + "' at this position");
}

}  // namespace rcts::harness::dump_detail
