// GeLU (tanh form) and SwiGLU kernels: forward vs libm references, backward vs central
// finite differences (fp64), the exact GeLU literals, thread-count independence.
#include "kernels/cpu/activation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/detmath.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

using test::Rng;

long double gelu_ref(long double x) {
  const long double k0 = std::sqrt(2.0L / 3.14159265358979323846264338327950288L);
  return 0.5L * x * (1.0L + std::tanh(k0 * (x + 0.044715L * x * x * x)));
}
long double silu_ref(long double a) { return a / (1.0L + std::exp(-a)); }

// 0.5 * x * (1 + tanh(u)) cancels for x << 0 (1 + tanh(u) -> 0), as it does in every
// implementation of this formula: the error is bounded in absolute terms by a few ulps
// of max(1, |x|), not relative to the (tiny) result.
template <typename T>
void check_gelu_forward(const std::vector<T>& x, double ulps) {
  std::vector<T> y(x.size());
  gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
  const double eps = std::numeric_limits<T>::epsilon();
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double ref = gelu_ref(x[i]);
    const double tol = ulps * eps * std::max(1.0, std::fabs(static_cast<double>(x[i])));
    if (!(std::fabs(static_cast<double>(y[i] - ref)) <= tol) && ++bad <= 5)
      ADD_FAILURE() << "gelu(" << x[i] << ") = " << y[i] << " vs " << static_cast<double>(ref);
  }
  EXPECT_EQ(bad, 0);
  // Positive inputs have no cancellation: relative accuracy.
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] > 0) {
      ASSERT_NEAR(y[i], static_cast<double>(gelu_ref(x[i])), 4 * eps * static_cast<double>(y[i])) << x[i];
    }
  }
}

TEST(CpuGelu, ForwardMatchesReference) {
  Rng rng(1);
  auto xd = rng.vec<double>(20000, -10, 10);
  xd[0] = 0.0;
  xd[1] = -30.0;
  xd[2] = 30.0;
  check_gelu_forward(xd, 4);
  std::vector<double> y(3);
  gelu_forward(y.data(), xd.data(), 3);
  EXPECT_EQ(y[0], 0.0);
  EXPECT_EQ(y[1], 0.0);
  EXPECT_EQ(y[2], 30.0);
  check_gelu_forward(std::vector<float>(xd.begin(), xd.end()), 4);
}

TEST(CpuGelu, ConstantsAreTheDocumentedLiterals) {
  // sqrt(2/pi) = 0.79788456080286535588 to 20 digits; the literal 0.7978845608028654
  // rounds to the same double.
  EXPECT_EQ(0.7978845608028654, static_cast<double>(std::sqrt(2.0L / 3.14159265358979323846264338327950288L)));
  // x = 1: 0.5 * (1 + tanh(k0 * 1.044715)) in double, evaluated as the kernel does.
  const double x = 1.0;
  double y;
  gelu_forward(&y, &x, 1);
  EXPECT_NEAR(y, 0.8411919906082768, 1e-15);
}

TEST(CpuGelu, BackwardMatchesFiniteDifferences) {
  Rng rng(2);
  const auto x = rng.vec<double>(300, -6, 6);
  const auto probe = rng.vec<double>(x.size());
  auto loss = [&](const std::vector<double>& xx) {
    std::vector<double> y(xx.size());
    gelu_forward(y.data(), xx.data(), static_cast<int64_t>(xx.size()));
    return test::dot(y, probe);
  };
  std::vector<double> dx(x.size());
  gelu_backward(dx.data(), probe.data(), x.data(), static_cast<int64_t>(x.size()));
  test::expect_close(dx, test::numeric_grad(loss, x), 1e-7, 1e-8, "gelu dinp");
}

TEST(CpuSwiGlu, ForwardMatchesReferenceAndChunkOrder) {
  const int64_t N = 7, F = 13;
  Rng rng(3);
  const auto x = rng.vec<double>(N * 2 * F, -8, 8);
  std::vector<double> y(N * F);
  swiglu_forward(y.data(), x.data(), N, F);
  std::vector<long double> ref(N * F);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t f = 0; f < F; ++f) ref[r * F + f] = silu_ref(x[r * 2 * F + f]) * x[r * 2 * F + F + f];
  test::expect_close(y, ref, 1e-14, 1e-300, "swiglu double");

  std::vector<float> xf(x.begin(), x.end()), yf(N * F);
  swiglu_forward(yf.data(), xf.data(), N, F);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t f = 0; f < F; ++f) ref[r * F + f] = silu_ref(xf[r * 2 * F + f]) * xf[r * 2 * F + F + f];
  test::expect_close(yf, ref, 3e-6, 1e-30, "swiglu float");

  // silu applies to the first half: a = 0 gives 0 whatever b is; b = 0 gives 0.
  const std::vector<float> one = {0.0f, 5.0f};
  float out = 1.0f;
  swiglu_forward(&out, one.data(), 1, 1);
  EXPECT_EQ(out, 0.0f);
}

TEST(CpuSwiGlu, BackwardMatchesFiniteDifferences) {
  const int64_t N = 5, F = 8;
  Rng rng(4);
  const auto x = rng.vec<double>(N * 2 * F, -5, 5);
  const auto probe = rng.vec<double>(N * F);
  auto loss = [&](const std::vector<double>& xx) {
    std::vector<double> y(N * F);
    swiglu_forward(y.data(), xx.data(), N, F);
    return test::dot(y, probe);
  };
  std::vector<double> dx(x.size());
  swiglu_backward(dx.data(), probe.data(), x.data(), N, F);
  test::expect_close(dx, test::numeric_grad(loss, x), 1e-7, 1e-8, "swiglu dinp");
  // In place into the input buffer gives the same bits.
  std::vector<double> inplace = x;
  swiglu_backward(inplace.data(), probe.data(), inplace.data(), N, F);
  EXPECT_TRUE(test::same_bits(inplace, dx));
}

TEST(CpuActivations, BitsFollowTheDocumentedExpressions) {
  // Scalar code written from the header's formulas and literals gives the same bits.
  Rng rng(9);
  const auto x = rng.vec<float>(2 * 4096, -7, 7), dy = rng.vec<float>(2 * 4096);
  const int64_t n = static_cast<int64_t>(x.size()), N = 4, F = 1024;
  std::vector<float> g(n), dg(n), s(N * F), ds(n);
  gelu_forward(g.data(), x.data(), n);
  gelu_backward(dg.data(), dy.data(), x.data(), n);
  swiglu_forward(s.data(), x.data(), N, F);
  swiglu_backward(ds.data(), dy.data(), x.data(), N, F);
  const float k0 = 0.7978845608028654f, k1 = 0.044715f, k3 = 0.134145f;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = detmath::tanh(k0 * (v + k1 * ((v * v) * v)));
    ASSERT_EQ(g[i], (0.5f * v) * (1.0f + t)) << i;
    const float grad = 0.5f * (1.0f + t) + ((0.5f * v) * (1.0f - t * t)) * (k0 * (1.0f + k3 * (v * v)));
    ASSERT_EQ(dg[i], dy[i] * grad) << i;
  }
  for (int64_t r = 0; r < N; ++r) {
    for (int64_t f = 0; f < F; ++f) {
      const float a = x[r * 2 * F + f], b = x[r * 2 * F + F + f], d = dy[r * F + f];
      const float sg = detmath::sigmoid(a);
      ASSERT_EQ(s[r * F + f], (a * sg) * b);
      ASSERT_EQ(ds[r * 2 * F + f], (d * b) * (sg * (1.0f + a * (1.0f - sg))));
      ASSERT_EQ(ds[r * 2 * F + F + f], d * (a * sg));
    }
  }
}

TEST(CpuActivations, BitsIndependentOfThreadCount) {
  const int64_t N = 64, F = 512;
  Rng rng(5);
  const auto x = rng.vec<float>(N * 2 * F, -6, 6), dy = rng.vec<float>(N * 2 * F);
  test::expect_thread_independent(
      [&] {
        const int64_t n = N * 2 * F;
        std::vector<float> g(n), dg(n), s(N * F), ds(n);
        gelu_forward(g.data(), x.data(), n);
        gelu_backward(dg.data(), dy.data(), x.data(), n);
        swiglu_forward(s.data(), x.data(), N, F);
        swiglu_backward(ds.data(), dy.data(), x.data(), N, F);
        return test::to_bytes(g, dg, s, ds);
      },
      "activations float");
}

}  // namespace
}  // namespace rcts::cpu
