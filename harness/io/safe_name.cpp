#include "harness/io/safe_name.hpp"

#include "harness/io/digest.hpp"

namespace rcts::harness {

std::string safe_file_stem(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) c = '_';
  }
  for (size_t i = 0; i < out.size() && out[i] == '.'; ++i) out[i] = '_';
  // Two long names that share their first 200 bytes must not share a file: the hash of
  // the whole name tells them apart.
  if (out.size() > kMaxSafeStem)
    out = out.substr(0, kMaxSafeStem - 17) + "-" + sha256_hex(s.data(), s.size()).substr(0, 16);
  return out.empty() ? "unnamed" : out;
}

}  // namespace rcts::harness
