// GeLU and SwiGLU CPU kernels; see activation.hpp for the formulas, constants and paths.
// The scalar loops below run the exact tier's per-element bodies (kernels/exact/pointwise.hpp),
// the definition; the float vector paths (activation_vec.inc) reproduce their bits and
// fall back to them for NaN results.
#include "kernels/cpu/activation.hpp"

#include <stdexcept>
#include <type_traits>

#include "kernels/common/detmath.hpp"
#include "kernels/exact/pointwise.hpp"

#define RCTS_VEC_W 4  // the baseline vector path: SSE2, part of x86-64
#include "kernels/cpu/activation_vec.inc"

namespace rcts::cpu {
namespace {

// The vector code's copies of the constants (it must not include detmath, see the .inc).
static_assert(vec::kLog2e == detmath::detail::kLog2eF && vec::kLn2Hi == detmath::detail::kLn2HiF &&
              vec::kLn2Lo == detmath::detail::kLn2LoF);
static_assert(vec::kGk0 == exact::GeluConst<float>::k0 && vec::kGk1 == exact::GeluConst<float>::k1 &&
              vec::kGk3 == exact::GeluConst<float>::k3);

template <typename T>
void gelu_forward_loop(T* out, const T* inp, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kActParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = exact::gelu_forward(inp[i]);
}

template <typename T>
void gelu_backward_loop(T* dinp, const T* dout, const T* inp, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kActParallelMin)
  for (int64_t i = 0; i < n; ++i) dinp[i] = exact::gelu_backward(dout[i], inp[i]);
}

template <typename T>
void swiglu_forward_loop(T* out, const T* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static) if (N * F >= kActParallelMin)
  for (int64_t r = 0; r < N; ++r) {
    const T* a = inp + r * 2 * F;
    for (int64_t f = 0; f < F; ++f) out[r * F + f] = exact::swiglu_forward(a[f], a[F + f]);
  }
}

template <typename T>
void swiglu_backward_loop(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static) if (N * F >= kActParallelMin)
  for (int64_t r = 0; r < N; ++r) {
    const T* a = inp + r * 2 * F;
    T* da = dinp + r * 2 * F;
    for (int64_t f = 0; f < F; ++f) {
      T ga, gb;  // all inputs read before writing: dinp may alias inp
      exact::swiglu_backward(dout[r * F + f], a[f], a[F + f], ga, gb);
      da[f] = ga;
      da[F + f] = gb;
    }
  }
}

// The float kernels of one vector path.
struct FloatKernels {
  void (*gelu_fwd)(float*, const float*, int64_t);
  void (*gelu_bwd)(float*, const float*, const float*, int64_t);
  void (*swiglu_fwd)(float*, const float*, int64_t, int64_t);
  void (*swiglu_bwd)(float*, const float*, const float*, int64_t, int64_t);
};
constexpr FloatKernels kSse2{vec::gelu_forward, vec::gelu_backward, vec::swiglu_forward, vec::swiglu_backward};
constexpr FloatKernels kAvx2{detail::gelu_forward_avx2, detail::gelu_backward_avx2, detail::swiglu_forward_avx2,
                             detail::swiglu_backward_avx2};
constexpr FloatKernels kAvx512{detail::gelu_forward_avx512, detail::gelu_backward_avx512,
                               detail::swiglu_forward_avx512, detail::swiglu_backward_avx512};

VecPathChoice g_path{"activation"};

// The float kernels of `path` (automatic: the active one); nullptr: the scalar loops.
const FloatKernels* float_vector_kernels(VecPath path) {
  switch (g_path.resolve(path)) {
    case ActivationPath::avx512: return &kAvx512;
    case ActivationPath::avx2: return &kAvx2;
    case ActivationPath::sse2: return &kSse2;
    default: return nullptr;
  }
}

}  // namespace

namespace detail {
float gelu_forward_scalar(float x) { return exact::gelu_forward(x); }
float gelu_backward_scalar(float dy, float x) { return exact::gelu_backward(dy, x); }
float swiglu_forward_scalar(float a, float b) { return exact::swiglu_forward(a, b); }
void swiglu_backward_scalar(float dy, float a, float b, float* da, float* db) { exact::swiglu_backward(dy, a, b, *da, *db); }
}  // namespace detail

bool activation_path_supported(ActivationPath p) { return vec_path_supported(p); }
void set_activation_path(ActivationPath p) { g_path.set(p); }
ActivationPath active_activation_path() { return g_path.active(); }

template <typename T>
void gelu_forward(T* out, const T* inp, int64_t n, VecPath path) {
  if constexpr (std::is_same_v<T, float>) {
    if (const FloatKernels* k = float_vector_kernels(path)) return k->gelu_fwd(out, inp, n);
  }
  gelu_forward_loop(out, inp, n);
}

template <typename T>
void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n, VecPath path) {
  if constexpr (std::is_same_v<T, float>) {
    if (const FloatKernels* k = float_vector_kernels(path)) return k->gelu_bwd(dinp, dout, inp, n);
  }
  gelu_backward_loop(dinp, dout, inp, n);
}

template <typename T>
void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F, VecPath path) {
  if constexpr (std::is_same_v<T, float>) {
    if (const FloatKernels* k = float_vector_kernels(path)) return k->swiglu_fwd(out, inp, N, F);
  }
  swiglu_forward_loop(out, inp, N, F);
}

template <typename T>
void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F, VecPath path) {
  if constexpr (std::is_same_v<T, float>) {
    if (const FloatKernels* k = float_vector_kernels(path)) return k->swiglu_bwd(dinp, dout, inp, N, F);
  }
  swiglu_backward_loop(dinp, dout, inp, N, F);
}

template void gelu_forward<float>(float*, const float*, int64_t, VecPath);
template void gelu_forward<double>(double*, const double*, int64_t, VecPath);
template void gelu_backward<float>(float*, const float*, const float*, int64_t, VecPath);
template void gelu_backward<double>(double*, const double*, const double*, int64_t, VecPath);
template void swiglu_forward<float>(float*, const float*, int64_t, int64_t, VecPath);
template void swiglu_forward<double>(double*, const double*, int64_t, int64_t, VecPath);
template void swiglu_backward<float>(float*, const float*, const float*, int64_t, int64_t, VecPath);
template void swiglu_backward<double>(double*, const double*, const double*, int64_t, int64_t, VecPath);

}  // namespace rcts::cpu
