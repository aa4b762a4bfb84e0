// The MLA RoPE table (reference/runtime/rope_table.hpp): its libm-free helpers against
// libm (an independent implementation, in the test only), and the table's structure:
// R_0 the de-interleaving permutation, each R_p orthogonal, R_p R_q = R_{p+q}, and the documented pair layout.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/runtime/rope_table.hpp"

namespace rcts {
namespace {

TEST(RopeMath, MatchesLibmClosely) {
  for (double x : {1e-6, 0.3, 1.0, 2.0, 10.0, 1e4, 5e5}) EXPECT_NEAR(rope_math::ln(x), std::log(x), 1e-14) << x;
  for (double x : {-20.0, -1.0, -1e-3, 0.0, 0.5, 3.0, 30.0})
    EXPECT_NEAR(rope_math::exp(x), std::exp(x), 1e-15 * std::exp(x)) << x;
  for (double x : {0.0, 0.1, 1.0, 3.14, 6.3, 17.0, 63.0, 500.0}) {
    double s, c;
    rope_math::sincos(x, s, c);
    EXPECT_NEAR(s, std::sin(x), 1e-13) << x;
    EXPECT_NEAR(c, std::cos(x), 1e-13) << x;
  }
}

TEST(RopeTable, KnownValuesAndLayout) {
  // r = 4: w_0 = 1, w_1 = base^(-1/2) = 0.01 for base 10^4.
  const auto t = rope_rotation_table(3, 4, 10000.0);
  ASSERT_EQ(t.size(), 3u * 16u);
  // R_0 is the de-interleaving permutation: y = [x0, x2, x1, x3].
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 4; ++k) {
      const int from = i < 2 ? 2 * i : 2 * (i - 2) + 1;
      EXPECT_EQ(t[i * 4 + k], k == from ? 1.0 : 0.0) << i << "," << k;
    }
  const double* R = t.data() + 16;  // p = 1
  // y[0] = x0 cos 1 - x1 sin 1, y[2] = x1 cos 1 + x0 sin 1 (de-interleaved output).
  EXPECT_NEAR(R[0 * 4 + 0], 0.54030230586813972, 1e-15);
  EXPECT_NEAR(R[0 * 4 + 1], -0.84147098480789651, 1e-15);
  EXPECT_NEAR(R[2 * 4 + 1], 0.54030230586813972, 1e-15);
  EXPECT_NEAR(R[2 * 4 + 0], 0.84147098480789651, 1e-15);
  EXPECT_NEAR(R[1 * 4 + 2], std::cos(0.01), 1e-15);
  EXPECT_NEAR(R[1 * 4 + 3], -std::sin(0.01), 1e-15);
  EXPECT_NEAR(R[3 * 4 + 3], std::cos(0.01), 1e-15);
  EXPECT_NEAR(R[3 * 4 + 2], std::sin(0.01), 1e-15);
}

TEST(RopeTable, RotationsComposeAndAreOrthogonal) {
  const int r = 6, P = 9;
  const auto t = rope_rotation_table(P, r, 500.0);
  auto at = [&](int p, int i, int k) { return t[static_cast<size_t>((p * r + i) * r + k)]; };
  for (int p = 0; p < P; ++p)
    for (int i = 0; i < r; ++i)
      for (int k = 0; k < r; ++k) {
        double orth = 0;
        for (int j = 0; j < r; ++j) orth += at(p, j, i) * at(p, j, k);
        EXPECT_NEAR(orth, i == k ? 1.0 : 0.0, 1e-14);
      }
  // Composition in the pair basis: rotating by p then q equals rotating by p + q. The
  // output is de-interleaved, so compose on the 2-vectors of each frequency directly.
  for (int p = 0; p < P; ++p)
    for (int q = 0; p + q < P; ++q)
      for (int j = 0; j < r / 2; ++j) {
        const double cp = at(p, j, 2 * j), sp = at(p, r / 2 + j, 2 * j);
        const double cq = at(q, j, 2 * j), sq = at(q, r / 2 + j, 2 * j);
        EXPECT_NEAR(cp * cq - sp * sq, at(p + q, j, 2 * j), 1e-14);
        EXPECT_NEAR(sp * cq + cp * sq, at(p + q, r / 2 + j, 2 * j), 1e-14);
      }
}

TEST(RopeTable, RejectsAnOddPart) { EXPECT_ANY_THROW(rope_rotation_table(2, 3, 10000.0)); }

}  // namespace
}  // namespace rcts
