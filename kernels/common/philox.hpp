// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11),
// bit-exact with the Random123 known-answer vectors (tests/rng/philox_test.cpp).
// Header-only, no state: the same (key, counter) gives the same 128 bits on any backend.
#pragma once
#include <array>
#include <cstdint>

namespace rcts::philox {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

inline Counter round(Counter c, Key k) {
  const uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
  return {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
          static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
}

inline Counter philox4x32_10(Counter c, Key k) {
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
inline Counter block(uint64_t seed, uint64_t index) {
  return philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u},
                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

}  // namespace rcts::philox
