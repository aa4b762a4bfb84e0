#include "harness/io/hex_bits.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>

namespace rcts::harness {

std::string double_hex_bits(double v) {
  const auto u = std::bit_cast<uint64_t>(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(u));
  return buf;
}

bool is_double_hex_bits(std::string_view s) {
  if (s.size() != 18 || s[0] != '0' || s[1] != 'x') return false;
  for (size_t i = 2; i < s.size(); ++i)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

}  // namespace rcts::harness
