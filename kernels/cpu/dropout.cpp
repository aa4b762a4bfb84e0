// Dropout CPU kernels; see dropout.hpp and kernels/common/dropout_rule.hpp.
#include "kernels/cpu/dropout.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/common/dropout_rule.hpp"
#include "kernels/common/philox.hpp"

namespace rcts::cpu {
namespace {

constexpr int64_t kDoParallelMin = 1 << 14;  // below this many elements, run on one thread

void dropout_check_p(double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument("dropout: probability must be in [0, 1], got " + std::to_string(p));
}

template <typename T>
void dropout_apply(T* out, const T* in, const uint8_t* mask, int64_t n, double p) {
  dropout_check_p(p);
  if (p == 0.0) {
    if (out != in) std::memmove(out, in, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  const T scale = p < 1.0 ? static_cast<T>(dropout_rule::scale(p)) : static_cast<T>(0);
  const T zero = 0;
#pragma omp parallel for schedule(static) if (n >= kDoParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    out[i] = p < 1.0 ? (in[i] * static_cast<T>(mask[i])) * scale : in[i] * zero;
  }
}

}  // namespace

void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) {
  dropout_check_p(p);
  if (n <= 0) return;
  if (p == 0.0) {  // threshold 0: every element is kept; skip the Philox work
    std::memset(mask, 1, static_cast<size_t>(n));
    return;
  }
  const uint32_t thr = dropout_rule::threshold(p);
  const int64_t nblocks = static_cast<int64_t>(dropout_rule::blocks_for(n));
#pragma omp parallel for schedule(static) if (n >= kDoParallelMin)
  for (int64_t b = 0; b < nblocks; ++b) {
    const philox::Counter words = philox::block(seed, offset + static_cast<uint64_t>(b));
    const int64_t i0 = 4 * b;
    const int64_t cnt = n - i0 < 4 ? n - i0 : 4;
    for (int64_t w = 0; w < cnt; ++w)
      mask[i0 + w] = (words[static_cast<size_t>(w)] >> 8) >= thr ? 1 : 0;
  }
}

template <typename T>
void dropout_forward(T* out, const T* inp, const uint8_t* mask, int64_t n, double p) {
  dropout_apply(out, inp, mask, n, p);
}

template <typename T>
void dropout_backward(T* dinp, const T* dout, const uint8_t* mask, int64_t n, double p) {
  dropout_apply(dinp, dout, mask, n, p);
}

template void dropout_forward<float>(float*, const float*, const uint8_t*, int64_t, double);
template void dropout_forward<double>(double*, const double*, const uint8_t*, int64_t, double);
template void dropout_backward<float>(float*, const float*, const uint8_t*, int64_t, double);
template void dropout_backward<double>(double*, const double*, const uint8_t*, int64_t, double);

}  // namespace rcts::cpu
