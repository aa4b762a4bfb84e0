#include "harness/io/safe_name.hpp"

namespace rcts::harness {

std::string safe_file_stem(const std::string& s) {
  std::string out = s.substr(0, 200);
  for (char& c : out) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) c = '_';
  }
  for (size_t i = 0; i < out.size() && out[i] == '.'; ++i) out[i] = '_';
  return out.empty() ? "unnamed" : out;
}

}  // namespace rcts::harness
