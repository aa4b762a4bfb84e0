// .npy v1.0 writer and reader.
#include "harness/io/npy.hpp"

#include <cstring>
#include <fstream>
#include <iterator>

#include "harness/io/atomic_file.hpp"
#include "harness/io/digest.hpp"

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

// The text after `'key':` in a header dict, trimmed of leading spaces.
std::string dict_value(const std::string& dict, const std::string& key, const std::string& where) {
  const auto k = dict.find("'" + key + "'");
  if (k == std::string::npos) throw Error(where + ": header has no '" + key + "'");
  auto p = dict.find(':', k);
  if (p == std::string::npos) throw Error(where + ": header key '" + key + "' has no value");
  p = dict.find_first_not_of(' ', p + 1);
  return p == std::string::npos ? std::string() : dict.substr(p);
}

Shape parse_shape(const std::string& v, const std::string& where) {
  RCTS_CHECK(!v.empty() && v[0] == '(', where + ": 'shape' is not a tuple");
  const auto close = v.find(')');
  RCTS_CHECK(close != std::string::npos, where + ": 'shape' tuple is not closed");
  Shape s;
  std::string num;
  for (size_t i = 1; i <= close; ++i) {
    const char c = v[i];
    if (c >= '0' && c <= '9') {
      num += c;
    } else if (c == ',' || c == ')') {
      if (!num.empty()) s.push_back(std::stoll(num));
      num.clear();
    } else if (c != ' ' && c != 'L') {
      throw Error(where + ": unexpected character in 'shape': " + v.substr(0, close + 1));
    }
  }
  return s;
}

}  // namespace

void write_npy(const fs::path& path, const Tensor& t) {
  RCTS_CHECK(t.defined(), "write_npy " + path.string() + ": tensor '" + t.name() + "' is undefined");
  const std::string header = npy_header(t);
  const std::byte* bytes = t.numel() ? t.bytes() : nullptr;  // checks release before opening
  AtomicFile out(path);
  out.write(header);
  if (bytes) out.write(bytes, static_cast<size_t>(t.nbytes()));
  out.commit();
}

NpyFile read_npy(const fs::path& path) {
  const std::string where = "read_npy " + path.string();
  std::ifstream in(path, std::ios::binary);
  RCTS_CHECK(in, where + ": cannot open");
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  RCTS_CHECK(raw.size() >= 10 && raw.compare(0, kMagicLen, kMagic, kMagicLen) == 0, where + ": not a .npy file");
  const int major = static_cast<unsigned char>(raw[6]);
  RCTS_CHECK(major == 1 || major == 2, where + ": unsupported .npy version " + std::to_string(major));
  const size_t len_bytes = major == 1 ? 2 : 4;
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= size_t{static_cast<unsigned char>(raw[8 + i])} << (8 * i);
  const size_t data_at = 8 + len_bytes + header_len;
  RCTS_CHECK(raw.size() >= data_at, where + ": header runs past the end of the file");
  const std::string dict = raw.substr(8 + len_bytes, header_len);

  NpyFile f;
  const std::string descr = dict_value(dict, "descr", where);
  RCTS_CHECK(descr.size() > 2 && descr[0] == '\'', where + ": 'descr' is not a string");
  f.descr = descr.substr(1, descr.find('\'', 1) - 1);
  f.fortran_order = dict_value(dict, "fortran_order", where).rfind("True", 0) == 0;
  f.shape = parse_shape(dict_value(dict, "shape", where), where);
  f.data.resize(raw.size() - data_at);
  if (!f.data.empty()) std::memcpy(f.data.data(), raw.data() + data_at, f.data.size());  // an empty vector's data() may be null
  return f;
}

std::string safe_file_stem(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    out += ok ? c : '_';
  }
  // No hidden files, no "." or ".." components.
  for (size_t i = 0; i < out.size() && out[i] == '.'; ++i) out[i] = '_';
  return out.empty() ? "unnamed" : out;
}

}  // namespace rcts::harness
