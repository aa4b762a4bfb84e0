// Data movement kernels; see layout.hpp.
#include "kernels/cpu/layout.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace rcts::cpu {

namespace {

template <typename E>
void to_heads(E* heads, const E* tok, int64_t width, int64_t col0, int64_t s, int64_t b, int64_t a, int64_t d) {
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ai = 0; ai < a; ++ai)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          heads[((bi * a + ai) * s + si) * d + di] = tok[(si * b + bi) * width + col0 + ai * d + di];
}

template <typename E>
void to_tokens(E* tok, const E* heads, int64_t width, int64_t col0, int64_t s, int64_t b, int64_t a, int64_t d) {
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t ai = 0; ai < a; ++ai)
      for (int64_t si = 0; si < s; ++si)
        for (int64_t di = 0; di < d; ++di)
          tok[(si * b + bi) * width + col0 + ai * d + di] = heads[((bi * a + ai) * s + si) * d + di];
}

// Runs f<E>() for the unsigned integer type of `bytes` bytes (a bit copy of any dtype).
template <typename F> void by_element_size(int bytes, F&& f) {
  switch (bytes) {
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    case 8: f.template operator()<uint64_t>(); break;
    default: throw std::invalid_argument("head permute: unsupported element size " + std::to_string(bytes));
  }
}

}  // namespace

void tokens_to_heads(void* heads, const void* tok, int elem_bytes, int64_t width, int64_t col0, int64_t s, int64_t b,
                     int64_t a, int64_t d) {
  by_element_size(elem_bytes, [&]<typename E>() {
    to_heads(static_cast<E*>(heads), static_cast<const E*>(tok), width, col0, s, b, a, d);
  });
}

void heads_to_tokens(void* tok, const void* heads, int elem_bytes, int64_t width, int64_t col0, int64_t s, int64_t b,
                     int64_t a, int64_t d) {
  by_element_size(elem_bytes, [&]<typename E>() {
    to_tokens(static_cast<E*>(tok), static_cast<const E*>(heads), width, col0, s, b, a, d);
  });
}

void gather_rows(void* dst, const void* src, int64_t row_bytes, int64_t src_rows, const int64_t* index, int64_t n) {
  if (row_bytes == 0) return;
  auto* out = static_cast<std::byte*>(dst);
  const auto* in = static_cast<const std::byte*>(src);
  for (int64_t i = 0; i < n; ++i) {
    if (index[i] < 0 || index[i] >= src_rows)
      throw std::out_of_range("gather_rows: row " + std::to_string(index[i]) + " out of range (" +
                              std::to_string(src_rows) + " rows)");
    std::memcpy(out + i * row_bytes, in + index[i] * row_bytes, static_cast<size_t>(row_bytes));
  }
}

}  // namespace rcts::cpu
