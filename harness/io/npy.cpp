// .npy v1.0 writer and reader.
#include "harness/io/npy.hpp"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>

#include "harness/io/atomic_file.hpp"
#include "harness/io/digest.hpp"
#include "reference/config/limits.hpp"

namespace rcts::harness {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[] = "\x93NUMPY";  // 6 bytes + NUL
constexpr size_t kMagicLen = 6;

std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) out += ",";  // a 1-tuple needs its comma in Python
  return out + ")";
}

// Header dict padded with spaces and ending in '\n' so the data starts 64-byte
// aligned, as numpy itself writes it.
std::string npy_header(const Tensor& t) {
  std::string dict = "{'descr': '" + std::string(dtype_numpy(t.dtype())) +
                     "', 'fortran_order': False, 'shape': " + shape_tuple(t.shape()) + ", }";
  const size_t preamble = kMagicLen + 2 + 2;  // magic, version, uint16 header length
  const size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';
  RCTS_CHECK(dict.size() <= 0xffff, "npy header for tensor '" + t.name() + "' is too long for format v1.0");
  std::string h(kMagic, kMagicLen);
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(dict.size() & 0xff);
  h += static_cast<char>(dict.size() >> 8);
  return h + dict;
}

// The element size of the numpy dtypes dumps use ('<f4', '|u1', ...), none for others.
std::optional<uint64_t> dtype_bytes_of_numpy(const std::string& descr) {
  for (const DType t : {DType::f64, DType::f32, DType::bf16, DType::u8, DType::i32, DType::i64})
    if (dtype_numpy(t) == descr) return dtype_size(t);
  return std::nullopt;
}

// The header dict as Python's literal_eval reads it, for the three keys numpy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string where) : t_(text), where_(std::move(where)) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    space();
    expect('{', "the header is not a dict");
    space();
    while (!at('}')) {
      const std::string key = quoted("a key");
      space();
      expect(':', "key '" + key + "' has no ':'");
      space();
      if (key == "descr") {
        once(seen_descr, key);
        h.descr = quoted("'descr'");
      } else if (key == "fortran_order") {
        once(seen_order, key);
        h.fortran_order = boolean();
      } else if (key == "shape") {
        once(seen_shape, key);
        h.shape = shape();
      } else {
        fail("unknown key '" + key + "' (a .npy header has 'descr', 'fortran_order' and 'shape')");
      }
      space();
      if (at(',')) {
        ++i_;
        space();
      } else if (!at('}')) {
        fail("expected ',' or '}' after '" + key + "'");
      }
    }
    ++i_;
    space();
    if (i_ != t_.size()) fail("text after the header dict");
    for (const auto& [seen, key] : {std::pair{seen_descr, "descr"}, {seen_order, "fortran_order"}, {seen_shape, "shape"}})
      if (!seen) fail("header has no '" + std::string(key) + "'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_ + ": .npy header at byte " + std::to_string(i_) + ": " + what);
  }
  bool at(char c) const { return i_ < t_.size() && t_[i_] == c; }
  void expect(char c, const std::string& what) {
    if (!at(c)) fail(what);
    ++i_;
  }
  void space() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  void once(bool& seen, const std::string& key) {
    if (seen) fail("key '" + key + "' is given twice");
    seen = true;
  }
  // A Python string literal without escapes, in ' or ".
  std::string quoted(const std::string& what) {
    if (!at('\'') && !at('"')) fail(what + " is not a string");
    const char q = t_[i_++];
    const size_t end = t_.find(q, i_);
    const size_t nl = t_.find('\n', i_);
    if (end == std::string_view::npos || nl < end) fail(what + " is an unterminated string");
    const std::string s(t_.substr(i_, end - i_));
    if (s.find('\\') != std::string::npos) fail(what + " has an escape, which .npy headers never need");
    i_ = end + 1;
    return s;
  }
  bool word_is(std::string_view w) const {
    if (t_.substr(i_, w.size()) != w) return false;
    const size_t j = i_ + w.size();
    return j == t_.size() || !(std::isalnum(static_cast<unsigned char>(t_[j])) || t_[j] == '_');
  }
  bool boolean() {
    for (const auto& [w, v] : {std::pair{std::string_view("True"), true}, {std::string_view("False"), false}})
      if (word_is(w)) {
        i_ += w.size();
        return v;
      }
    fail("'fortran_order' is not True or False");
  }
  int64_t integer() {
    const size_t start = i_;
    uint64_t v = 0;
    while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') {
      if (v > (uint64_t{INT64_MAX} - static_cast<uint64_t>(t_[i_] - '0')) / 10) {
        i_ = start;
        fail("'shape' has a dimension beyond 2^63 - 1");
      }
      v = v * 10 + static_cast<uint64_t>(t_[i_++] - '0');
    }
    if (i_ == start) fail("'shape' is not a tuple of non-negative integers");
    if (i_ - start > 1 && t_[start] == '0') fail("'shape' has a dimension with a leading zero");
    if (i_ < t_.size() && (std::isalpha(static_cast<unsigned char>(t_[i_])) || t_[i_] == '_'))
      fail("'shape' is not a tuple of non-negative integers");
    return static_cast<int64_t>(v);
  }
  // (), (n,), (n, m), (n, m,): a 1-tuple needs its comma.
  Shape shape() {
    expect('(', "'shape' is not a tuple");
    Shape s;
    space();
    bool comma = false;
    while (!at(')')) {
      if (static_cast<int>(s.size()) == limits::kMaxTensorDims)
        fail("'shape' has more than " + std::to_string(limits::kMaxTensorDims) + " dimensions");
      s.push_back(integer());
      space();
      comma = at(',');
      if (comma) {
        ++i_;
        space();
      } else if (!at(')')) {
        fail("'shape' is not a tuple of non-negative integers");
      }
    }
    ++i_;
    if (s.size() == 1 && !comma) fail("'shape' (" + std::to_string(s[0]) + ") is an integer, not a tuple: write (" +
                                      std::to_string(s[0]) + ",)");
    return s;
  }

  std::string_view t_;
  std::string where_;
  size_t i_ = 0;
};

}  // namespace

void write_npy(const fs::path& path, const Tensor& t) {
  RCTS_CHECK(t.defined(), "write_npy " + path.string() + ": tensor '" + t.name() + "' is undefined");
  const std::string header = npy_header(t);
  const std::byte* bytes = t.numel() ? t.bytes() : nullptr;  // checks release before opening
  AtomicFile out(path, /*durable=*/false, /*sweep=*/false);  // dumps are written into fresh staging directories
  out.write(header);
  if (bytes) out.write(bytes, static_cast<size_t>(t.nbytes()));
  out.commit();
}

std::optional<uint64_t> shape_bytes(const Shape& shape, uint64_t elem, uint64_t limit) {
  uint64_t n = elem;
  for (const int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > limit / static_cast<uint64_t>(d)) return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  if (n > limit) return std::nullopt;
  return n;
}

NpyHeader parse_npy_header_dict(std::string_view dict, const std::string& where) {
  return HeaderParser(dict, where).parse();
}

NpyHeader read_npy_header(const fs::path& path) {
  const std::string where = "read_npy " + path.string();
  std::ifstream in(path, std::ios::binary);
  RCTS_CHECK(in, where + ": cannot open");
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  RCTS_CHECK(!ec, where + ": cannot read its size: " + ec.message());
  char pre[12] = {};
  in.read(pre, 10);
  RCTS_CHECK(in.gcount() == 10 && std::memcmp(pre, kMagic, kMagicLen) == 0, where + ": not a .npy file");
  const int major = static_cast<unsigned char>(pre[6]);
  RCTS_CHECK(major == 1 || major == 2, where + ": unsupported .npy version " + std::to_string(major));
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (major == 2) {
    in.read(pre + 10, 2);
    RCTS_CHECK(in.gcount() == 2, where + ": the header length is cut off");
  }
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= uint64_t{static_cast<unsigned char>(pre[8 + i])} << (8 * i);
  RCTS_CHECK(header_len <= static_cast<uint64_t>(limits::kMaxNpyHeaderBytes),
             where + ": header of " + std::to_string(header_len) + " bytes, more than the " +
                 std::to_string(limits::kMaxNpyHeaderBytes) + " numpy reads");
  const uint64_t data_at = 8 + len_bytes + header_len;
  RCTS_CHECK(size >= data_at, where + ": header of " + std::to_string(header_len) + " bytes runs past the end of the " +
                                  std::to_string(size) + "-byte file (truncated)");
  std::string dict(static_cast<size_t>(header_len), '\0');
  in.read(dict.data(), static_cast<std::streamsize>(header_len));
  RCTS_CHECK(in.gcount() == static_cast<std::streamsize>(header_len), where + ": header cut off while reading");
  NpyHeader h = HeaderParser(dict, where).parse();
  h.data_offset = data_at;
  h.data_bytes = size - data_at;
  return h;
}

NpyFile read_npy(const fs::path& path, uint64_t max_data_bytes) {
  const std::string where = "read_npy " + path.string();
  const NpyHeader h = read_npy_header(path);
  const auto elem = dtype_bytes_of_numpy(h.descr);
  RCTS_CHECK(elem, where + ": 'descr' '" + h.descr + "' is no dtype rcts reads");
  const auto want = shape_bytes(h.shape, *elem, max_data_bytes);
  RCTS_CHECK(want, where + ": 'shape' " + shape_str(h.shape) + " of '" + h.descr + "' needs more than " +
                       std::to_string(max_data_bytes) + " bytes");
  RCTS_CHECK(h.data_bytes == *want, where + ": holds " + std::to_string(h.data_bytes) + " data bytes, 'shape' " +
                                        shape_str(h.shape) + " of '" + h.descr + "' needs " + std::to_string(*want) +
                                        (h.data_bytes < *want ? " (truncated)" : ""));
  NpyFile f;
  f.descr = h.descr;
  f.fortran_order = h.fortran_order;
  f.shape = h.shape;
  f.data.resize(static_cast<size_t>(*want));
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(h.data_offset));
  if (!f.data.empty()) in.read(reinterpret_cast<char*>(f.data.data()), static_cast<std::streamsize>(f.data.size()));
  RCTS_CHECK(in || f.data.empty(), where + ": the data changed size while being read");
  return f;
}

}  // namespace rcts::harness
