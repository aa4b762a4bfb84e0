// The methods (all in double, round-to-nearest, no fused operations):
//   ln(x):  x = m * 2^e with m in [sqrt(1/2), sqrt(2)) (exponent bits, exact), then
//           ln x = e*ln2 + 2 * sum_{k<40} z^(2k+1)/(2k+1), z = (m-1)/(m+1), |z| < 0.172.
//   exp(x): n = nearest integer to x/ln2, r = (x - n*ln2_hi) - n*ln2_lo (|r| <= 0.35; a
//           Cody-Waite split of ln2), the Taylor sum
//           of e^r to 30 terms, times 2^n (exact scaling by exponent bits).
//   sincos: k = nearest integer to x/(2 pi), r = (x - k*c1) - k*c2 (c1 + c2 = 2 pi,
//           Cody-Waite split), then the Taylor sums of sin r and cos r to 30 terms.
// 40 and 30 terms put the truncation error far below double rounding at these ranges;
// what matters for rcts is only that every machine computes the same bits.
#include "reference/runtime/rope_table.hpp"

#include <cstring>

#include "reference/core/error.hpp"

namespace rcts {
namespace rope_math {
namespace {
constexpr double kLn2 = 0.69314718055994530942;
// Cody-Waite split of ln 2 (fdlibm's): kLn2Hi has its low 32 bits zero, so n*kLn2Hi is exact.
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kTwoPiHi = 6.28318530717958623200;  // double nearest 2 pi
constexpr double kTwoPiLo = 2.44929359829470635445e-16;  // 2 pi - kTwoPiHi

double nearest_integer(double v) {
  // Round half away from zero by truncation of v +- 0.5 (|v| is small here).
  const double t = v < 0 ? v - 0.5 : v + 0.5;
  return static_cast<double>(static_cast<int64_t>(t));
}

double scale_by_power_of_two(double v, int64_t n) {
  while (n > 0) { v *= 2.0; --n; }
  while (n < 0) { v *= 0.5; ++n; }
  return v;
}
}  // namespace

double ln(double x) {
  RCTS_CHECK(x > 0, "rope table: ln of a non-positive number");
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int64_t e = static_cast<int64_t>((bits >> 52) & 0x7ff) - 1023;
  RCTS_CHECK(e > -1023, "rope table: ln of a subnormal number");
  bits = (bits & ~(uint64_t{0x7ff} << 52)) | (uint64_t{1023} << 52);  // m in [1, 2)
  double m;
  std::memcpy(&m, &bits, sizeof m);
  if (m > 1.41421356237309504880) { m *= 0.5; ++e; }
  const double z = (m - 1.0) / (m + 1.0), z2 = z * z;
  double power = z, sum = 0.0;
  for (int k = 0; k < 40; ++k) {
    sum += power / static_cast<double>(2 * k + 1);
    power *= z2;
  }
  return static_cast<double>(e) * kLn2 + 2.0 * sum;
}

double exp(double x) {
  const double n = nearest_integer(x / kLn2);
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 30; ++k) {
    term = term * r / static_cast<double>(k);
    sum += term;
  }
  return scale_by_power_of_two(sum, static_cast<int64_t>(n));
}

void sincos(double x, double& s, double& c) {
  RCTS_CHECK(x >= 0, "rope table: negative angle");
  const double k = nearest_integer(x / kTwoPiHi);
  const double r = (x - k * kTwoPiHi) - k * kTwoPiLo;
  const double r2 = r * r;
  double ts = r, tc = 1.0;
  s = r;
  c = 1.0;
  for (int n = 1; n < 30; ++n) {
    ts = -ts * r2 / static_cast<double>((2 * n) * (2 * n + 1));
    tc = -tc * r2 / static_cast<double>((2 * n - 1) * (2 * n));
    s += ts;
    c += tc;
  }
}
}  // namespace rope_math

std::vector<double> rope_rotation_table(int64_t positions, int64_t r, double base) {
  RCTS_CHECK(r > 0 && r % 2 == 0, "rope table: the RoPE part must have an even, positive size");
  const int64_t half = r / 2;
  const double ln_base = rope_math::ln(base);
  std::vector<double> w(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j)
    w[static_cast<size_t>(j)] = rope_math::exp(-(static_cast<double>(2 * j) / static_cast<double>(r)) * ln_base);
  std::vector<double> t(static_cast<size_t>(positions * r * r), 0.0);
  for (int64_t p = 0; p < positions; ++p) {
    double* R = t.data() + p * r * r;
    for (int64_t j = 0; j < half; ++j) {
      double s, c;
      rope_math::sincos(static_cast<double>(p) * w[static_cast<size_t>(j)], s, c);
      R[j * r + 2 * j] = c;
      R[j * r + 2 * j + 1] = -s;
      R[(half + j) * r + 2 * j + 1] = c;
      R[(half + j) * r + 2 * j] = s;
    }
  }
  return t;
}

}  // namespace rcts
