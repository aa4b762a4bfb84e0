// Dropout CPU kernels; see dropout.hpp and kernels/common/dropout_rule.hpp.
// The mask's vector paths (dropout_vec.inc) evaluate the very same Philox blocks, W at a
// time; the scalar loop below (dropout_mask_loop) is the definition, one Philox block per
// four outputs (the exact tier's per-output body, kernels/exact/pointwise.hpp, draws the
// same block for each of them). Applying a mask runs the exact tier's element body.
#include "kernels/cpu/dropout.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/common/dropout_rule.hpp"
#include "kernels/common/philox.hpp"
#include "kernels/exact/pointwise.hpp"

#define RCTS_VEC_W 4  // the baseline vector path: SSE2, part of x86-64
#include "kernels/cpu/dropout_vec.inc"

namespace rcts::cpu {
namespace {

// The vector code's copies of the Philox constants (it must not include philox.hpp's
// inline functions into ISA-specific code, see the .inc).
static_assert(vec::kPhM0 == philox::kM0 && vec::kPhM1 == philox::kM1 && vec::kPhW0 == philox::kW0 &&
              vec::kPhW1 == philox::kW1);

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
  const T scale = exact::dropout_scale<T>(p);
#pragma omp parallel for schedule(static) if (n >= kDoParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = exact::dropout_apply(in[i], mask[i], p, scale);
}

// The definition: one Philox block per iteration, threads split blocks.
void dropout_mask_loop(uint8_t* mask, int64_t n, uint32_t thr, uint64_t seed, uint64_t offset) {
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

VecPathChoice g_dropout_path{"dropout"};

}  // namespace

bool dropout_path_supported(DropoutPath p) { return vec_path_supported(p); }
void set_dropout_path(DropoutPath p) { g_dropout_path.set(p); }
DropoutPath active_dropout_path() { return g_dropout_path.active(); }

void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset, VecPath path) {
  dropout_check_p(p);
  if (n <= 0) return;
  const uint32_t thr = dropout_rule::threshold(p);
  // (word >> 8) < 2^24: threshold 0 keeps every element, threshold 2^24 (p >= 1 - 2^-25)
  // drops every one; skip the Philox work.
  if (thr == 0 || thr > 0xFFFFFFu) {
    std::memset(mask, thr == 0 ? 1 : 0, static_cast<size_t>(n));
    return;
  }
  switch (g_dropout_path.resolve(path)) {
    case DropoutPath::avx512: return detail::dropout_mask_avx512(mask, n, thr, seed, offset);
    case DropoutPath::avx2: return detail::dropout_mask_avx2(mask, n, thr, seed, offset);
    case DropoutPath::sse2: return vec::dropout_mask(mask, n, thr, seed, offset);
    default: return dropout_mask_loop(mask, n, thr, seed, offset);
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
