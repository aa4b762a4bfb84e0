// Causal softmax kernels: forward vs a long-double reference (masked entries exactly 0),
// backward vs central finite differences (fp64), thread-count independence.
#include "kernels/cpu/softmax.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/common/detmath.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

using test::Rng;

template <typename T>
void check_forward(double rtol) {
  const int64_t BH = 3, S = 11;
  Rng rng(1);
  auto x = rng.vec<T>(BH * S * S, -6, 6);
  x[5] = static_cast<T>(-1e30);  // a huge negative score in a masked slot must not matter
  std::vector<T> y(x.size(), static_cast<T>(42));
  softmax_causal_forward(y.data(), x.data(), BH, S);
  std::vector<long double> ref(x.size(), 0.0L);
  for (int64_t row = 0; row < BH * S; ++row) {
    const int64_t i = row % S;
    long double m = x[row * S];
    for (int64_t j = 0; j <= i; ++j) m = std::max<long double>(m, x[row * S + j]);
    long double sum = 0;
    for (int64_t j = 0; j <= i; ++j) sum += std::exp(static_cast<long double>(x[row * S + j]) - m);
    for (int64_t j = 0; j <= i; ++j) ref[row * S + j] = std::exp(static_cast<long double>(x[row * S + j]) - m) / sum;
    for (int64_t j = i + 1; j < S; ++j) EXPECT_EQ(y[row * S + j], static_cast<T>(0)) << "masked " << row << "," << j;
  }
  test::expect_close(y, ref, rtol, 0.0, "softmax out");
}

TEST(CpuSoftmaxCausal, ForwardMatchesReferenceDouble) { check_forward<double>(1e-14); }
TEST(CpuSoftmaxCausal, ForwardMatchesReferenceFloat) { check_forward<float>(2e-6); }

TEST(CpuSoftmaxCausal, FirstRowIsOneAndLargeScoresAreStable) {
  const int64_t S = 4;
  std::vector<float> x = {1000.0f, 0, 0, 0, 1000.0f, 1000.0f, 0, 0, -5.0f, 80.0f, 80.0f, 0, 3, 3, 3, 3};
  std::vector<float> y(S * S);
  softmax_causal_forward(y.data(), x.data(), 1, S);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[4], 0.5f);
  EXPECT_EQ(y[5], 0.5f);
  EXPECT_EQ(y[9], y[10]);
  EXPECT_EQ(y[12], 0.25f);
  EXPECT_EQ(y[15], 0.25f);
}

TEST(CpuSoftmaxCausal, BackwardMatchesFiniteDifferences) {
  const int64_t BH = 2, S = 6;
  Rng rng(2);
  const auto x = rng.vec<double>(BH * S * S, -3, 3);
  const auto probe = rng.vec<double>(x.size());
  auto loss = [&](const std::vector<double>& xx) {
    std::vector<double> y(xx.size());
    softmax_causal_forward(y.data(), xx.data(), BH, S);
    return test::dot(y, probe);
  };
  std::vector<double> y(x.size()), dx(x.size(), 99.0);
  softmax_causal_forward(y.data(), x.data(), BH, S);
  softmax_causal_backward(dx.data(), probe.data(), y.data(), BH, S);
  test::expect_close(dx, test::numeric_grad(loss, x), 1e-6, 1e-8, "softmax dinp");
  for (int64_t row = 0; row < BH * S; ++row)
    for (int64_t j = row % S + 1; j < S; ++j) EXPECT_EQ(dx[row * S + j], 0.0) << row << "," << j;
}

TEST(CpuSoftmaxCausal, BitsFollowTheDocumentedOrder) {
  // A scalar loop written from the header's formulas gives the same bits.
  const int64_t BH = 2, S = 33;
  Rng rng(8);
  const auto x = rng.vec<float>(BH * S * S, -9, 9), dy = rng.vec<float>(BH * S * S);
  std::vector<float> y(x.size()), dx(x.size());
  softmax_causal_forward(y.data(), x.data(), BH, S);
  softmax_causal_backward(dx.data(), dy.data(), y.data(), BH, S);
  for (int64_t row = 0; row < BH * S; ++row) {
    const int64_t i = row % S;
    const float* xr = x.data() + row * S;
    float m = xr[0];
    for (int64_t j = 1; j <= i; ++j) m = xr[j] > m ? xr[j] : m;
    float sum = 0.0f;
    for (int64_t j = 0; j <= i; ++j) sum += detmath::exp(xr[j] - m);
    float s = 0.0f;
    for (int64_t j = 0; j <= i; ++j) s += dy[row * S + j] * (detmath::exp(xr[j] - m) / sum);
    for (int64_t j = 0; j <= i; ++j) {
      const float yj = detmath::exp(xr[j] - m) / sum;
      ASSERT_EQ(y[row * S + j], yj) << row << "," << j;
      ASSERT_EQ(dx[row * S + j], yj * (dy[row * S + j] - s)) << row << "," << j;
    }
  }
}

TEST(CpuSoftmaxCausal, BitsIndependentOfThreadCount) {
  const int64_t BH = 8, S = 64;  // 32768 elements: above the parallel threshold
  Rng rng(4);
  const auto x = rng.vec<float>(BH * S * S, -8, 8), dy = rng.vec<float>(BH * S * S);
  test::expect_thread_independent(
      [&] {
        std::vector<float> y(x.size()), dx(x.size());
        softmax_causal_forward(y.data(), x.data(), BH, S);
        softmax_causal_backward(dx.data(), dy.data(), y.data(), BH, S);
        return test::to_bytes(y, dx);
      },
      "softmax float");
  const auto xd = rng.vec<double>(BH * S * S, -8, 8), dyd = rng.vec<double>(BH * S * S);
  test::expect_thread_independent(
      [&] {
        std::vector<double> y(xd.size()), dx(xd.size());
        softmax_causal_forward(y.data(), xd.data(), BH, S);
        softmax_causal_backward(dx.data(), dyd.data(), y.data(), BH, S);
        return test::to_bytes(y, dx);
      },
      "softmax double");
}

// Core attention runs both directions in place (scores -> probabilities, d(probs) ->
// d(scores) in one buffer); the bits must equal the out-of-place calls.
TEST(CpuSoftmaxCausal, InPlaceEqualsOutOfPlace) {
  const int64_t BH = 3, S = 37;
  Rng rng(5);
  const auto x = rng.vec<float>(BH * S * S, -8, 8), dy = rng.vec<float>(BH * S * S);
  std::vector<float> y(x.size()), dx(x.size());
  softmax_causal_forward(y.data(), x.data(), BH, S);
  softmax_causal_backward(dx.data(), dy.data(), y.data(), BH, S);
  std::vector<float> inplace = x;
  softmax_causal_forward(inplace.data(), inplace.data(), BH, S);
  EXPECT_TRUE(test::same_bits(inplace, y));
  std::vector<float> g = dy;
  softmax_causal_backward(g.data(), g.data(), y.data(), BH, S);
  EXPECT_TRUE(test::same_bits(g, dx));
}

}  // namespace
}  // namespace rcts::cpu
