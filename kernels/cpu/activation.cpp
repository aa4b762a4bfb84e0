// GeLU and SwiGLU CPU kernels; see activation.hpp for the formulas and constants.
#include "kernels/cpu/activation.hpp"

#include "kernels/common/detmath.hpp"

namespace rcts::cpu {
namespace {

constexpr int64_t kActParallelMin = 1 << 14;  // below this many elements, run on one thread

// The GeLU literals, each rounded once (decimal -> T) by the compiler.
template <typename T>
struct GeluConst;
template <>
struct GeluConst<float> {
  static constexpr float k0 = 0.7978845608028654f;  // sqrt(2/pi)
  static constexpr float k1 = 0.044715f;
  static constexpr float k3 = 0.134145f;  // 3 * 0.044715
};
template <>
struct GeluConst<double> {
  static constexpr double k0 = 0.7978845608028654;
  static constexpr double k1 = 0.044715;
  static constexpr double k3 = 0.134145;
};

}  // namespace

template <typename T>
void gelu_forward(T* out, const T* inp, int64_t n) {
  using K = GeluConst<T>;
  const T half = static_cast<T>(0.5), one = static_cast<T>(1);
#pragma omp parallel for schedule(static) if (n >= kActParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    const T u = K::k0 * (x + K::k1 * ((x * x) * x));
    const T t = detmath::tanh(u);
    out[i] = (half * x) * (one + t);
  }
}

template <typename T>
void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n) {
  using K = GeluConst<T>;
  const T half = static_cast<T>(0.5), one = static_cast<T>(1);
#pragma omp parallel for schedule(static) if (n >= kActParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T x = inp[i];
    const T u = K::k0 * (x + K::k1 * ((x * x) * x));
    const T t = detmath::tanh(u);
    const T grad = half * (one + t) + ((half * x) * (one - t * t)) * (K::k0 * (one + K::k3 * (x * x)));
    dinp[i] = dout[i] * grad;
  }
}

template <typename T>
void swiglu_forward(T* out, const T* inp, int64_t N, int64_t F) {
#pragma omp parallel for schedule(static) if (N * F >= kActParallelMin)
  for (int64_t r = 0; r < N; ++r) {
    const T* a = inp + r * 2 * F;
    const T* b = a + F;
    T* y = out + r * F;
    for (int64_t f = 0; f < F; ++f) {
      const T af = a[f];
      const T s = detmath::sigmoid(af);
      y[f] = (af * s) * b[f];
    }
  }
}

template <typename T>
void swiglu_backward(T* dinp, const T* dout, const T* inp, int64_t N, int64_t F) {
  const T one = static_cast<T>(1);
#pragma omp parallel for schedule(static) if (N * F >= kActParallelMin)
  for (int64_t r = 0; r < N; ++r) {
    const T* a = inp + r * 2 * F;
    const T* b = a + F;
    const T* dy = dout + r * F;
    T* da = dinp + r * 2 * F;
    T* db = da + F;
    for (int64_t f = 0; f < F; ++f) {
      const T af = a[f], bf = b[f], dyf = dy[f];
      const T s = detmath::sigmoid(af);
      const T dsilu = s * (one + af * (one - s));
      da[f] = (dyf * bf) * dsilu;
      db[f] = dyf * (af * s);
    }
  }
}

template void gelu_forward<float>(float*, const float*, int64_t);
template void gelu_forward<double>(double*, const double*, int64_t);
template void gelu_backward<float>(float*, const float*, const float*, int64_t);
template void gelu_backward<double>(double*, const double*, const double*, int64_t);
template void swiglu_forward<float>(float*, const float*, int64_t, int64_t);
template void swiglu_forward<double>(double*, const double*, int64_t, int64_t);
template void swiglu_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void swiglu_backward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace rcts::cpu
