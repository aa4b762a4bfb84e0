// Data movement without arithmetic, CPU reference kernels: the attention head
// permutes, row gathers and dtype conversions. All exact (copies, or one rounding per
// element for a narrowing conversion); threads split elements only.
#pragma once
#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16.hpp"
#include "kernels/common/convert.hpp"

namespace rcts::cpu {

// Token layout (s, b, width) at column col0 <-> heads (b, a, s, d), elements of
// `elem_bytes` bytes (2, 4 or 8; std::invalid_argument otherwise):
//   heads[((bi*a + ai)*s + si)*d + di] = tok[(si*b + bi)*width + col0 + ai*d + di]
void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s, int64_t b,
                     int64_t a, int64_t d);
void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t s, int64_t b,
                     int64_t a, int64_t d);

// dst row i = src row index[i], rows of row_bytes bytes; index values must lie in
// [0, src_rows) (std::out_of_range naming the row otherwise).
void gather_rows(void* dst, const void* src, int64_t row_bytes, int64_t src_rows, const int64_t* index, int64_t n);

// dst[i] = D(src[i]) by the element rule of kernels/common/convert.hpp (bf16 narrowing
// rounds to nearest even; floating to integer saturates, NaN -> 0). Threads split
// elements above a size threshold.
template <typename D, typename S>
void convert(D* dst, const S* src, int64_t n) {
  constexpr int64_t kParallelMin = int64_t{1} << 16;
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) dst[i] = convert_element<D, S>(src[i]);
}

}  // namespace rcts::cpu
