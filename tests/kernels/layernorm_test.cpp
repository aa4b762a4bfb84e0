// LayerNorm kernels: forward vs a long-double reference, backward vs central finite
// differences (fp64), += accumulation of parameter grads, thread-count independence.
#include "kernels/cpu/layernorm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

using test::Rng;

template <typename T>
std::vector<long double> ln_reference(const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                                      int64_t N, int64_t C, double eps) {
  std::vector<long double> y(x.size());
  for (int64_t r = 0; r < N; ++r) {
    long double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += x[r * C + c];
    mean /= C;
    for (int64_t c = 0; c < C; ++c) var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
    var /= C;
    const long double rstd = 1.0L / std::sqrt(var + static_cast<long double>(static_cast<T>(eps)));
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = (x[r * C + c] - mean) * rstd * w[c] + b[c];
  }
  return y;
}

template <typename T>
void check_forward(double rtol) {
  const int64_t N = 5, C = 37;
  Rng rng(11);
  auto x = rng.vec<T>(N * C, -3, 5), w = rng.vec<T>(C, 0.5, 1.5), b = rng.vec<T>(C);
  std::vector<T> y(N * C);
  layernorm_forward(y.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
  test::expect_close(y, ln_reference(x, w, b, N, C, 1e-5), rtol, rtol, "layernorm out");
}

TEST(CpuLayerNorm, ForwardMatchesReferenceDouble) { check_forward<double>(1e-13); }
TEST(CpuLayerNorm, ForwardMatchesReferenceFloat) { check_forward<float>(2e-6); }

TEST(CpuLayerNorm, ForwardWithoutBiasEqualsZeroBias) {
  const int64_t N = 3, C = 16;
  Rng rng(3);
  auto x = rng.vec<float>(N * C), w = rng.vec<float>(C);
  std::vector<float> zero(C, 0.0f), y0(N * C), y1(N * C);
  layernorm_forward(y0.data(), x.data(), w.data(), zero.data(), N, C, 1e-5);
  layernorm_forward(y1.data(), x.data(), w.data(), static_cast<const float*>(nullptr), N, C, 1e-5);
  EXPECT_TRUE(test::same_bits(y0, y1));
}

TEST(CpuLayerNorm, BackwardMatchesFiniteDifferences) {
  const int64_t N = 4, C = 9;
  const double eps = 1e-5;
  Rng rng(7);
  auto x = rng.vec<double>(N * C, -2, 2), w = rng.vec<double>(C, 0.5, 1.5), b = rng.vec<double>(C);
  const auto probe = rng.vec<double>(N * C);  // L = sum(out * probe)
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& ww, const std::vector<double>& bb) {
    std::vector<double> y(N * C);
    layernorm_forward(y.data(), xx.data(), ww.data(), bb.data(), N, C, eps);
    return test::dot(y, probe);
  };
  std::vector<double> dx(N * C, 123.0), dw(C, 0.0), db(C, 0.0);
  layernorm_backward(dx.data(), dw.data(), db.data(), probe.data(), x.data(), w.data(), N, C, eps);

  const auto ndx = test::numeric_grad([&](const std::vector<double>& v) { return loss(v, w, b); }, x);
  const auto ndw = test::numeric_grad([&](const std::vector<double>& v) { return loss(x, v, b); }, w);
  const auto ndb = test::numeric_grad([&](const std::vector<double>& v) { return loss(x, w, v); }, b);
  test::expect_close(dx, ndx, 1e-6, 1e-7, "dinp");
  test::expect_close(dw, ndw, 1e-6, 1e-7, "dweight");
  test::expect_close(db, ndb, 1e-6, 1e-7, "dbias");
}

TEST(CpuLayerNorm, ParamGradsAccumulateInputGradIsWritten) {
  const int64_t N = 6, C = 70;  // two column blocks
  Rng rng(5);
  auto x = rng.vec<float>(N * C), w = rng.vec<float>(C), dy = rng.vec<float>(N * C);
  std::vector<float> dx1(N * C), dx2(N * C, 7.0f), dw(C, 0.0f), db(C, 0.0f);
  layernorm_backward(dx1.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, 1e-5);
  const auto dw1 = dw, db1 = db;
  layernorm_backward(dx2.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, 1e-5);
  EXPECT_TRUE(test::same_bits(dx1, dx2)) << "dinp must be overwritten, not accumulated";
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_EQ(dw[c], 2.0f * dw1[c]) << c;  // (0 + s) + s == 2s exactly
    EXPECT_EQ(db[c], 2.0f * db1[c]) << c;
  }
  // dbias null is allowed.
  layernorm_backward(dx1.data(), dw.data(), static_cast<float*>(nullptr), dy.data(), x.data(), w.data(), N, C,
                     1e-5);
}

TEST(CpuLayerNorm, ParamGradSumIsRowOrderFromZero) {
  // dweight[c] += ((dy0*n0 + dy1*n1) + dy2*n2) with the sum formed from 0 first: check
  // against that exact float expression.
  const int64_t N = 3, C = 4;
  Rng rng(9);
  auto x = rng.vec<float>(N * C), w = rng.vec<float>(C), dy = rng.vec<float>(N * C);
  std::vector<float> dx(N * C), dw(C, 0.25f), db(C, -0.5f);
  layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, 1e-5);
  for (int64_t c = 0; c < C; ++c) {
    float sw = 0.0f, sb = 0.0f;
    for (int64_t r = 0; r < N; ++r) {
      const float* xr = x.data() + r * C;
      float sum = 0.0f;
      for (int64_t k = 0; k < C; ++k) sum += xr[k];
      const float mean = sum / static_cast<float>(C);
      float sq = 0.0f;
      for (int64_t k = 0; k < C; ++k) sq += (xr[k] - mean) * (xr[k] - mean);
      const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(C) + static_cast<float>(1e-5));
      sw += dy[r * C + c] * ((xr[c] - mean) * rstd);
      sb += dy[r * C + c];
    }
    EXPECT_EQ(dw[c], 0.25f + sw) << c;
    EXPECT_EQ(db[c], -0.5f + sb) << c;
  }
}

TEST(CpuLayerNorm, BitsIndependentOfThreadCount) {
  const int64_t N = 96, C = 330;  // above the parallel threshold, ragged column blocks
  Rng rng(21);
  const auto x = rng.vec<float>(N * C, -4, 4), w = rng.vec<float>(C), b = rng.vec<float>(C),
             dy = rng.vec<float>(N * C);
  test::expect_thread_independent(
      [&] {
        std::vector<float> y(N * C), dx(N * C), dw(C, 0.5f), db(C, 0.5f);
        layernorm_forward(y.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
        layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, 1e-5);
        return test::to_bytes(y, dx, dw, db);
      },
      "layernorm float");
  const auto xd = rng.vec<double>(N * C), wd = rng.vec<double>(C), bd = rng.vec<double>(C),
             dyd = rng.vec<double>(N * C);
  test::expect_thread_independent(
      [&] {
        std::vector<double> y(N * C), dx(N * C), dw(C, 0.0), db(C, 0.0);
        layernorm_forward(y.data(), xd.data(), wd.data(), bd.data(), N, C, 1e-5);
        layernorm_backward(dx.data(), dw.data(), db.data(), dyd.data(), xd.data(), wd.data(), N, C, 1e-5);
        return test::to_bytes(y, dx, dw, db);
      },
      "layernorm double");
}

}  // namespace
}  // namespace rcts::cpu
