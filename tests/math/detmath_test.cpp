// detmath accuracy and special values.
//
// Accuracy: 10^6 points per function and type (half uniform over the function's working
// range, half spread over magnitudes / bit patterns, both signs where defined), each
// compared in ulps with the correctly rounded value as libm gives it one precision up:
// float results against double libm rounded to float, double results against long double
// libm rounded to double. The max ulp distance is asserted (the bounds documented in
// kernels/common/detmath.hpp). Where long double is just double (some platforms), the
// double reference is itself libm's and one more ulp is allowed.
// Bits: a digest of each function over a fixed grid pins the exact output bits; a change
// to detmath that changes them changes every golden gradient, so it must be deliberate.
#include "kernels/common/detmath.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>

namespace {

namespace dm = rcts::detmath;

int64_t ordered(double x) {
  int64_t i;
  std::memcpy(&i, &x, sizeof i);
  return i < 0 ? INT64_MIN - i : i;
}
int64_t ordered(float x) {
  int32_t i;
  std::memcpy(&i, &x, sizeof i);
  return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : i;
}
template <typename T>
uint64_t ulp_distance(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : UINT64_MAX;
  const int64_t x = ordered(a), y = ordered(b);
  const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  return x > y ? ux - uy : uy - ux;
}

uint64_t g_state = 0;
uint64_t next_u64() {  // splitmix64
  uint64_t z = (g_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double unit() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }

// Points: half uniform in [lo, hi]; half with |x| log-uniform in [2^emin, 2^emax] (random
// sign if lo < 0), clamped to [lo, hi].
template <typename T>
T sample(int64_t i, int64_t n, double lo, double hi, int emin, int emax) {
  if (i < n / 2) {
    const double u = (static_cast<double>(i) + unit()) / static_cast<double>(n / 2);
    return static_cast<T>(lo + (hi - lo) * u);
  }
  double mag = std::exp2(emin + (emax - emin) * unit());
  double x = (lo < 0 && (next_u64() & 1)) ? -mag : mag;
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return static_cast<T>(x);
}

struct Result {
  uint64_t max_ulp = 0;
  double worst_x = 0;
};

using RefFn = std::function<long double(long double)>;

template <typename T>
Result sweep(T (*f)(T), const RefFn& ref, double lo, double hi, int emin, int emax, int64_t n = 1000000) {
  g_state = 0x5eed0000 + static_cast<uint64_t>(sizeof(T));
  Result r;
  for (int64_t i = 0; i < n; ++i) {
    const T x = sample<T>(i, n, lo, hi, emin, emax);
    T want;
    if constexpr (std::is_same_v<T, float>)
      want = static_cast<float>(static_cast<double>(ref(static_cast<double>(x))));
    else
      want = static_cast<double>(ref(static_cast<long double>(x)));
    const uint64_t d = ulp_distance(f(x), want);
    if (d > r.max_ulp) {
      r.max_ulp = d;
      r.worst_x = static_cast<double>(x);
    }
  }
  return r;
}

// float references use double libm (the long double argument holds a double there).
long double ref_exp(long double x) { return std::exp(x); }
long double ref_expm1(long double x) { return std::expm1(x); }
long double ref_log(long double x) { return std::log(x); }
long double ref_tanh(long double x) { return std::tanh(x); }
long double ref_erf(long double x) { return std::erf(x); }
long double ref_sigmoid(long double x) { return 1.0L / (1.0L + std::exp(-x)); }
double ref_exp_d(double x) { return std::exp(x); }
double ref_expm1_d(double x) { return std::expm1(x); }
double ref_log_d(double x) { return std::log(x); }
double ref_tanh_d(double x) { return std::tanh(x); }
double ref_erf_d(double x) { return std::erf(x); }
double ref_sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// For float, evaluate the reference in double (not long double) so the test measures
// against double libm rounded once to float.
RefFn as_double(double (*g)(double)) {
  return [g](long double x) { return static_cast<long double>(g(static_cast<double>(x))); };
}

constexpr bool kLongDoubleIsDouble = LDBL_MANT_DIG == DBL_MANT_DIG;
uint64_t dbl_bound(uint64_t b) { return kLongDoubleIsDouble ? b + 1 : b; }

#define RCTS_EXPECT_ULP(res, bound, what)                                                                  \
  do {                                                                                                     \
    const Result r_ = (res);                                                                               \
    EXPECT_LE(r_.max_ulp, (bound)) << what << ": worst x = " << std::hexfloat << r_.worst_x << std::defaultfloat \
                                   << " (" << r_.worst_x << ")";                                           \
    std::printf("[ detmath ] %-16s max %llu ulp\n", what, static_cast<unsigned long long>(r_.max_ulp));     \
  } while (0)

float fexp(float x) { return dm::exp(x); }
float fexpm1(float x) { return dm::expm1(x); }
float flog(float x) { return dm::log(x); }
float ftanh(float x) { return dm::tanh(x); }
float ferf(float x) { return dm::erf(x); }
float fsig(float x) { return dm::sigmoid(x); }
double dexp(double x) { return dm::exp(x); }
double dexpm1(double x) { return dm::expm1(x); }
double dlog(double x) { return dm::log(x); }
double dtanh(double x) { return dm::tanh(x); }
double derf(double x) { return dm::erf(x); }
double dsig(double x) { return dm::sigmoid(x); }

TEST(DetmathUlp, Exp) {
  RCTS_EXPECT_ULP(sweep<float>(fexp, as_double(ref_exp_d), -104.0, 89.0, -40, 7), 1u, "exp float");
  RCTS_EXPECT_ULP(sweep<double>(dexp, ref_exp, -746.0, 710.0, -60, 10), dbl_bound(1), "exp double");
}

TEST(DetmathUlp, Expm1) {
  RCTS_EXPECT_ULP(sweep<float>(fexpm1, as_double(ref_expm1_d), -18.0, 89.0, -40, 7), 1u, "expm1 float");
  RCTS_EXPECT_ULP(sweep<double>(dexpm1, ref_expm1, -40.0, 710.0, -60, 10), dbl_bound(1), "expm1 double");
}

TEST(DetmathUlp, Log) {
  // The magnitude half spans the whole positive range, subnormals included.
  RCTS_EXPECT_ULP(sweep<float>(flog, as_double(ref_log_d), 0.0, 4.0, -149, 128), 1u, "log float");
  RCTS_EXPECT_ULP(sweep<double>(dlog, ref_log, 0.0, 4.0, -1074, 1024), dbl_bound(1), "log double");
}

TEST(DetmathUlp, LogRandomBitPatterns) {
  g_state = 99;
  uint64_t worst_f = 0, worst_d = 0;
  for (int i = 0; i < 500000; ++i) {
    const uint64_t u = next_u64();
    uint32_t uf = static_cast<uint32_t>(u) & 0x7fffffffu;
    uint64_t ud = u & 0x7fffffffffffffffull;
    if (uf >= 0x7f800000u) uf = 0x3f800000u;
    if (ud >= 0x7ff0000000000000ull) ud = 0x3ff0000000000000ull;
    float xf;
    double xd;
    std::memcpy(&xf, &uf, 4);
    std::memcpy(&xd, &ud, 8);
    worst_f = std::max(worst_f, ulp_distance(dm::log(xf), static_cast<float>(std::log(static_cast<double>(xf)))));
    worst_d = std::max(worst_d, ulp_distance(dm::log(xd), static_cast<double>(std::log(static_cast<long double>(xd)))));
  }
  EXPECT_LE(worst_f, 1u);
  EXPECT_LE(worst_d, dbl_bound(1));
}

TEST(DetmathUlp, Tanh) {
  RCTS_EXPECT_ULP(sweep<float>(ftanh, as_double(ref_tanh_d), -12.0, 12.0, -40, 5), 1u, "tanh float");
  RCTS_EXPECT_ULP(sweep<double>(dtanh, ref_tanh, -25.0, 25.0, -60, 5), dbl_bound(1), "tanh double");
}

TEST(DetmathUlp, Erf) {
  RCTS_EXPECT_ULP(sweep<float>(ferf, as_double(ref_erf_d), -5.0, 5.0, -40, 3), 1u, "erf float");
  RCTS_EXPECT_ULP(sweep<double>(derf, ref_erf, -7.0, 7.0, -60, 3), dbl_bound(1), "erf double");
}

TEST(DetmathUlp, Sigmoid) {
  RCTS_EXPECT_ULP(sweep<float>(fsig, as_double(ref_sigmoid_d), -110.0, 110.0, -40, 7), 2u, "sigmoid float");
  RCTS_EXPECT_ULP(sweep<double>(dsig, ref_sigmoid, -750.0, 750.0, -60, 10), dbl_bound(2), "sigmoid double");
}

TEST(DetmathUlp, DenseAroundModelRanges) {
  // GeLU/softmax/SwiGLU arguments live in a few units around 0: sweep that densely.
  RCTS_EXPECT_ULP(sweep<float>(fexp, as_double(ref_exp_d), -20.0, 0.0, -30, 4, 400000), 1u, "exp float [-20,0]");
  RCTS_EXPECT_ULP(sweep<float>(ftanh, as_double(ref_tanh_d), -4.0, 4.0, -30, 2, 400000), 1u, "tanh float [-4,4]");
  RCTS_EXPECT_ULP(sweep<double>(dtanh, ref_tanh, -4.0, 4.0, -30, 2, 400000), dbl_bound(1), "tanh double [-4,4]");
  RCTS_EXPECT_ULP(sweep<float>(ferf, as_double(ref_erf_d), -4.0, 4.0, -30, 2, 400000), 1u, "erf float [-4,4]");
}

template <typename T>
void special_values() {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T big = std::numeric_limits<T>::max(), tiny = std::numeric_limits<T>::denorm_min();
  EXPECT_TRUE(std::isnan(dm::exp(nan)));
  EXPECT_EQ(dm::exp(inf), inf);
  EXPECT_EQ(dm::exp(-inf), T(0));
  EXPECT_EQ(dm::exp(T(0)), T(1));
  EXPECT_EQ(dm::exp(T(-0.0)), T(1));
  EXPECT_EQ(dm::exp(std::log(big) * T(1.0001)), inf);  // overflow
  EXPECT_EQ(dm::exp(T(std::log(static_cast<double>(tiny))) - T(2)), T(0));  // underflow
  EXPECT_EQ(dm::exp(T(std::log(static_cast<double>(tiny)))), tiny);   // smallest subnormal
  EXPECT_TRUE(std::isfinite(dm::exp(std::nextafter(std::log(big), T(0)))));

  EXPECT_TRUE(std::isnan(dm::expm1(nan)));
  EXPECT_EQ(dm::expm1(inf), inf);
  EXPECT_EQ(dm::expm1(-inf), T(-1));
  EXPECT_TRUE(std::signbit(dm::expm1(T(-0.0))));
  EXPECT_EQ(dm::expm1(tiny), tiny);

  EXPECT_TRUE(std::isnan(dm::log(nan)));
  EXPECT_TRUE(std::isnan(dm::log(T(-1))));
  EXPECT_TRUE(std::isnan(dm::log(-inf)));
  EXPECT_EQ(dm::log(T(0)), -inf);
  EXPECT_EQ(dm::log(T(-0.0)), -inf);
  EXPECT_EQ(dm::log(inf), inf);
  EXPECT_EQ(dm::log(T(1)), T(0));
  EXPECT_EQ(dm::log(T(2)), static_cast<T>(std::log(2.0L)));
  EXPECT_EQ(dm::log(tiny), static_cast<T>(std::log(static_cast<long double>(tiny))));
  EXPECT_EQ(dm::log(big), static_cast<T>(std::log(static_cast<long double>(big))));

  EXPECT_TRUE(std::isnan(dm::tanh(nan)));
  EXPECT_EQ(dm::tanh(inf), T(1));
  EXPECT_EQ(dm::tanh(-inf), T(-1));
  EXPECT_TRUE(std::signbit(dm::tanh(T(-0.0))));
  EXPECT_EQ(dm::tanh(tiny), tiny);
  EXPECT_EQ(dm::tanh(-tiny), -tiny);

  EXPECT_TRUE(std::isnan(dm::erf(nan)));
  EXPECT_EQ(dm::erf(inf), T(1));
  EXPECT_EQ(dm::erf(-inf), T(-1));
  EXPECT_TRUE(std::signbit(dm::erf(T(-0.0))));
  EXPECT_EQ(dm::erf(T(0)), T(0));

  EXPECT_TRUE(std::isnan(dm::sigmoid(nan)));
  EXPECT_EQ(dm::sigmoid(inf), T(1));
  EXPECT_EQ(dm::sigmoid(-inf), T(0));
  EXPECT_EQ(dm::sigmoid(T(0)), T(0.5));
}

TEST(DetmathSpecial, Float) { special_values<float>(); }
TEST(DetmathSpecial, Double) { special_values<double>(); }

// FNV-1a over the output bits on a fixed grid of inputs.
template <typename T>
uint64_t digest(T (*f)(T), double lo, double hi, int n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i <= n; ++i) {
    const T x = static_cast<T>(lo + (hi - lo) * i / n);
    const T y = f(x);
    unsigned char b[sizeof(T)];
    std::memcpy(b, &y, sizeof(T));
    for (unsigned char c : b) h = (h ^ c) * 0x100000001b3ull;
  }
  return h;
}

TEST(DetmathBits, DigestsArePinned) {
  // If a deliberate change to detmath alters these, golden gradients must be regenerated.
  EXPECT_EQ(digest<float>(fexp, -100, 88, 20000), 0x365887d74d05bf58ull) << "exp float";
  EXPECT_EQ(digest<double>(dexp, -740, 700, 20000), 0x67c7fe4346df199dull) << "exp double";
  EXPECT_EQ(digest<float>(fexpm1, -10, 10, 20000), 0xf07e12a429e77175ull) << "expm1 float";
  EXPECT_EQ(digest<double>(dexpm1, -10, 10, 20000), 0xc8901de42ed64cc2ull) << "expm1 double";
  EXPECT_EQ(digest<float>(flog, 1e-30, 1e4, 20000), 0xfe20af5bde623d38ull) << "log float";
  EXPECT_EQ(digest<double>(dlog, 1e-300, 1e4, 20000), 0xad0f4f4c0585036bull) << "log double";
  EXPECT_EQ(digest<float>(ftanh, -8, 8, 20000), 0x248576061a105dddull) << "tanh float";
  EXPECT_EQ(digest<double>(dtanh, -8, 8, 20000), 0x60094431d798cda4ull) << "tanh double";
  EXPECT_EQ(digest<float>(ferf, -5, 5, 20000), 0xade9f0a7c218ff39ull) << "erf float";
  EXPECT_EQ(digest<double>(derf, -7, 7, 20000), 0x72b11a09e87b2db7ull) << "erf double";
  EXPECT_EQ(digest<float>(fsig, -20, 20, 20000), 0x40671f4778f88d03ull) << "sigmoid float";
  EXPECT_EQ(digest<double>(dsig, -20, 20, 20000), 0xe3b77bdcb59169ffull) << "sigmoid double";
}

}  // namespace
