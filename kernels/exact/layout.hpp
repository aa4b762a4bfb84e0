// Data movement bodies (kernels/cpu/layout.hpp): the attention head permutes as index
// maps (one element each) and the source row of a gathered row.
#pragma once
#include <cstdint>

#include "kernels/common/host_device.hpp"

namespace rcts::exact {

// For heads element ((bi*a + ai)*s + si)*d + di: its index in the token layout
// (s, b, width) at column col0, i.e. (si*b + bi)*width + col0 + ai*d + di.
RCTS_HD inline int64_t token_index_of_head_element(int64_t h, int64_t width, int64_t col0, int64_t s, int64_t b,
                                                   int64_t a, int64_t d) {
  const int64_t di = h % d;
  const int64_t si = (h / d) % s;
  const int64_t ai = (h / (d * s)) % a;
  const int64_t bi = h / (d * s * a);
  return (si * b + bi) * width + col0 + ai * d + di;
}

}  // namespace rcts::exact
