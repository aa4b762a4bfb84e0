// Causal softmax CPU kernels; see softmax.hpp for the formulas and the reduction orders.
// The scalar loops run the exact tier's row bodies (kernels/exact/norm.hpp), the
// definition; the float forward's vector paths (softmax_vec.inc) reproduce their bits.
#include "kernels/cpu/softmax.hpp"

#include <stdexcept>
#include <type_traits>

#include "kernels/common/detmath.hpp"
#include "kernels/exact/norm.hpp"

#define RCTS_VEC_W 4  // the baseline vector path: SSE2, part of x86-64
#include "kernels/cpu/softmax_vec.inc"

namespace rcts::cpu {
namespace {

// The vector code's copies of detmath's constants (it must not include detmath, see the .inc).
static_assert(vec::kLog2e == detmath::detail::kLog2eF && vec::kLn2Hi == detmath::detail::kLn2HiF &&
              vec::kLn2Lo == detmath::detail::kLn2LoF);

template <typename T>
void softmax_causal_forward_loop(T* out, const T* inp, int64_t BH, int64_t S) {
  const int64_t rows = BH * S;
#pragma omp parallel for schedule(static) if (rows * S >= kSmParallelMin)
  for (int64_t row = 0; row < rows; ++row) exact::softmax_causal_row(out + row * S, inp + row * S, row % S, S);
}

VecPathChoice g_softmax_path{"softmax"};

}  // namespace

bool softmax_path_supported(SoftmaxPath p) { return vec_path_supported(p); }
void set_softmax_path(SoftmaxPath p) { g_softmax_path.set(p); }
SoftmaxPath active_softmax_path() { return g_softmax_path.active(); }

template <typename T>
void softmax_causal_forward(T* out, const T* inp, int64_t BH, int64_t S, VecPath path) {
  if constexpr (std::is_same_v<T, float>) {
    switch (g_softmax_path.resolve(path)) {
      case SoftmaxPath::avx512: return detail::softmax_causal_forward_avx512(out, inp, BH, S);
      case SoftmaxPath::avx2: return detail::softmax_causal_forward_avx2(out, inp, BH, S);
      case SoftmaxPath::sse2: return vec::softmax_causal_forward(out, inp, BH, S);
      default: break;
    }
  }
  softmax_causal_forward_loop(out, inp, BH, S);
}

template <typename T>
void softmax_causal_backward(T* dinp, const T* dout, const T* out, int64_t BH, int64_t S) {
  const int64_t rows = BH * S;
#pragma omp parallel for schedule(static) if (rows * S >= kSmParallelMin)
  for (int64_t row = 0; row < rows; ++row)
    exact::softmax_causal_backward_row(dinp + row * S, dout + row * S, out + row * S, row % S, S);
}

template void softmax_causal_forward<float>(float*, const float*, int64_t, int64_t, VecPath);
template void softmax_causal_forward<double>(double*, const double*, int64_t, int64_t, VecPath);
template void softmax_causal_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void softmax_causal_backward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace rcts::cpu
