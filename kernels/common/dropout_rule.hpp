// The dropout rule shared by every backend (design §2, §5). A generator hands out
// (seed, offset) where the offset counts 128-bit Philox blocks. Dropout over n
// elements starting at block `offset`:
//   element i reads 32-bit word (i % 4) of block (offset + i / 4);
//   it is kept iff (word >> 8) >= threshold, threshold = floor(p * 2^24 + 0.5);
//   kept elements are scaled by 1 / (1 - p) (computed in double, rounded once to
//   the compute type); the generator then advances by ceil(n / 4) blocks.
// Every element's decision depends only on (seed, offset, i): masks are independent
// of thread count and backend. Host and device (RCTS_HD).
#pragma once
#include <cstdint>

#include "kernels/common/philox.hpp"

namespace rcts::dropout_rule {

RCTS_HD inline uint32_t threshold(double p) { return static_cast<uint32_t>(p * 16777216.0 + 0.5); }
RCTS_HD inline uint64_t blocks_for(int64_t n) { return static_cast<uint64_t>((n + 3) / 4); }
RCTS_HD inline double scale(double p) { return 1.0 / (1.0 - p); }

// Keep decision of element i (1 keep, 0 drop). Prefer block-wise loops in kernels.
RCTS_HD inline uint8_t keep(uint64_t seed, uint64_t offset, int64_t i, uint32_t thr) {
  const auto b = philox::block(seed, offset + static_cast<uint64_t>(i / 4));
  return (b[static_cast<size_t>(i % 4)] >> 8) >= thr ? 1 : 0;
}

}  // namespace rcts::dropout_rule
