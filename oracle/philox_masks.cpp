// The suite's own Philox and mask rule; see philox_masks.hpp. Deliberately shares no
// code with kernels/common/philox.hpp or dropout_rule.hpp.
#include "oracle/philox_masks.hpp"

#include <cstring>
#include <string>

#include "reference/core/error.hpp"

namespace rcts::oracle::philox_masks {

namespace {
// Random123 philox.h: PHILOX_M4x32_0/1 and PHILOX_W32_0/1.
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p & 0xFFFFFFFFu);
}
}  // namespace

Words philox4x32_10(Words ctr, std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // bumpkey before every round but the first
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, ctr[0], hi0, lo0);
    mulhilo(kMul1, ctr[2], hi1, lo1);
    ctr = Words{hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

Words stream_block(uint64_t seed, uint64_t index) {
  return philox4x32_10(Words{static_cast<uint32_t>(index & 0xFFFFFFFFu), static_cast<uint32_t>(index >> 32), 0u, 0u},
                       {static_cast<uint32_t>(seed & 0xFFFFFFFFu), static_cast<uint32_t>(seed >> 32)});
}

uint32_t keep_threshold(double p) {
  if (!(p >= 0.0 && p <= 1.0)) throw Error("mask oracle: dropout probability " + std::to_string(p) + " is not in [0, 1]");
  uint64_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  uint64_t m = bits & ((uint64_t{1} << 52) - 1);
  int e = 1 - 1075;  // subnormal: p = m * 2^-1074
  if (biased != 0) {
    m |= uint64_t{1} << 52;
    e = biased - 1075;
  }
  // p * 2^24 = m / 2^s with s >= 28 (p <= 1), so floor(m / 2^s + 1/2) = (2m + 2^s) >> (s + 1).
  const int s = -(e + 24);
  if (s > 54) return 0;  // m / 2^s < 1/4
  return static_cast<uint32_t>(((m << 1) + (uint64_t{1} << s)) >> (s + 1));
}

uint64_t blocks_for(int64_t n) { return n <= 0 ? 0 : static_cast<uint64_t>(n / 4 + (n % 4 != 0 ? 1 : 0)); }

std::vector<uint8_t> dropout_mask(uint64_t seed, uint64_t offset, double p, int64_t n) {
  const uint32_t thr = keep_threshold(p);
  std::vector<uint8_t> mask(static_cast<size_t>(n > 0 ? n : 0));
  Words w{};
  for (int64_t i = 0; i < n; ++i) {
    if (i % 4 == 0) w = stream_block(seed, offset + static_cast<uint64_t>(i / 4));
    mask[static_cast<size_t>(i)] = (w[static_cast<size_t>(i % 4)] >> 8) >= thr ? 1 : 0;
  }
  return mask;
}

uint64_t fnv1a64(const uint8_t* data, size_t n) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (size_t i = 0; i < n; ++i) h = (h ^ data[i]) * 1099511628211ull;  // FNV prime 2^40 + 2^8 + 0xb3
  return h;
}

}  // namespace rcts::oracle::philox_masks
