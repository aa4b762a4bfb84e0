// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
// bit-exact with the Random123 known-answer vectors (tests/rng/philox_test.cpp).
// Header-only, no state, host and device (RCTS_HD, plain structs): the same (key,
// counter) gives the same 128 bits on any backend.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace rcts::philox {

struct Counter {
  uint32_t w[4];
  RCTS_HD constexpr uint32_t& operator[](size_t i) { return w[i]; }
  RCTS_HD constexpr const uint32_t& operator[](size_t i) const { return w[i]; }
  RCTS_HD constexpr bool operator==(const Counter& o) const {
    return w[0] == o.w[0] && w[1] == o.w[1] && w[2] == o.w[2] && w[3] == o.w[3];
  }
  RCTS_HD constexpr bool operator!=(const Counter& o) const { return !(*this == o); }
};
struct Key {
  uint32_t w[2];
  RCTS_HD constexpr uint32_t& operator[](size_t i) { return w[i]; }
  RCTS_HD constexpr const uint32_t& operator[](size_t i) const { return w[i]; }
};

inline constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

RCTS_HD inline Counter round(Counter c, Key k) {
  const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
  return {{static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)}};
}

RCTS_HD inline Counter philox4x32_10(Counter c, Key k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    c = round(c, k);
  }
  return c;
}

// rcts stream layout: key = the 64-bit seed (low word first); counter = the 64-bit
// block index (low word first), zero upper words. One block yields four 32-bit draws.
RCTS_HD inline Counter block(uint64_t seed, uint64_t index) {
  return philox4x32_10({{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u}},
                       {{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}});
}

}  // namespace rcts::philox
