// The float GeLU / SwiGLU paths (scalar, sse2, avx2, avx512) against a scalar reference
// written here from activation.hpp's formulas with detmath::tanh / detmath::sigmoid, bit
// for bit: dense sweeps of float bit patterns, special values, the neighbourhood of every
// branch threshold inside detmath's tanh / expm1 / exp / sigmoid, ragged lengths (vector
// tails), 1 and 2 OpenMP threads, in-place calls. NaN results must be NaN, with the same
// payload where only one NaN source is involved.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/bf16.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/cpu/activation.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

using test::Rng;

constexpr float k0 = 0.7978845608028654f, k1 = 0.044715f, k3 = 0.134145f;


float gelu_u(float x) { return k0 * (x + k1 * ((x * x) * x)); }
float ref_gelu(float x) { return (0.5f * x) * (1.0f + detmath::tanh(gelu_u(x))); }
float ref_gelu_grad(float dy, float x) {
  const float t = detmath::tanh(gelu_u(x));
  return dy * (0.5f * (1.0f + t) + ((0.5f * x) * (1.0f - t * t)) * (k0 * (1.0f + k3 * (x * x))));
}

// +-v and n floats either side of each (bit-pattern neighbours).
void add_around(std::vector<float>& v, float c, int n) {
  const uint32_t b = float_bits(std::fabs(c));
  for (int d = -n; d <= n; ++d) {
    const int64_t u = static_cast<int64_t>(b) + d;
    if (u < 0 || u >= 0x7f800000) continue;
    v.push_back(bits_float(static_cast<uint32_t>(u)));
    v.push_back(-bits_float(static_cast<uint32_t>(u)));
  }
}

// Every `stride`-th float bit pattern in [lo_bits, hi_bits], both signs.
void add_sweep(std::vector<float>& v, uint32_t lo_bits, uint32_t hi_bits, uint32_t stride) {
  for (uint64_t u = lo_bits; u <= hi_bits; u += stride) {
    v.push_back(bits_float(static_cast<uint32_t>(u)));
    v.push_back(-bits_float(static_cast<uint32_t>(u)));
  }
}

std::vector<float> specials() {
  std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 1e10f, -1e10f,
                          1e20f, -1e20f, 1.0f, -1.0f, 0.625f, -0.625f, 10.0f, -10.0f, 104.0f, -104.0f};
  for (uint32_t u : {0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0xff812345u, 0x7f800001u, 0x00000001u, 0x80000001u,
                     0x007fffffu, 0x807fffffu, 0x00400000u})
    v.push_back(bits_float(u));
  return v;
}

// Smallest x >= 0 (as a float) with gelu_u(x) >= target: gelu_u is nondecreasing.
float gelu_x_for_u(float target) {
  uint32_t lo = 0, hi = float_bits(20.0f);
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (gelu_u(bits_float(mid)) >= target) hi = mid;
    else lo = mid + 1;
  }
  return bits_float(lo);
}

// GeLU inputs: all specials; every 997th float in [0, 12] and every 61st in [0.25, 12]
// (both signs); and +-300 floats around each x whose u = gelu_u(x) sits on a branch of
// detmath::tanh: |u| = 0.625, |u| = 10, and each |u| where expm1(2|u|)'s k steps (2..29).
const std::vector<float>& gelu_inputs() {
  static const std::vector<float> v = [] {
    std::vector<float> x = specials();
    add_sweep(x, 0, float_bits(12.0f), 997);
    add_sweep(x, float_bits(0.25f), float_bits(12.0f), 61);
    add_around(x, gelu_x_for_u(0.625f), 300);
    add_around(x, gelu_x_for_u(10.0f), 300);
    for (int j = 2; j <= 30; ++j)
      add_around(x, gelu_x_for_u(static_cast<float>((j - 0.5) / (2 * 1.4426950408889634))), 300);
    return x;
  }();
  return v;
}

// SwiGLU gate inputs a: specials; every 997th float in [0, 110] (both signs); +-64 floats
// around each |a| where exp's k steps (1..151: k < -100 is exp's two-step scaling) and
// +-300 around 104 (exp's underflow cut) and 0.
const std::vector<float>& swiglu_inputs() {
  static const std::vector<float> v = [] {
    std::vector<float> a = specials();
    add_sweep(a, 0, float_bits(110.0f), 997);
    for (int j = 1; j <= 151; ++j) add_around(a, static_cast<float>((j - 0.5) / 1.4426950408889634), 64);
    add_around(a, 104.0f, 300);
    add_around(a, 0.0f, 300);
    return a;
  }();
  return v;
}

// Bits equal, or both NaN (payloads: see SameBitsAsScalarPath).
void expect_same(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& x,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : float_bits(got[i]) == float_bits(want[i]);
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << what << "[" << i << "] x=" << x[i] << " (0x" << std::hex << float_bits(x[i]) << "): got 0x"
                    << float_bits(got[i]) << " want 0x" << float_bits(want[i]) << std::dec;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " differ";
}

struct SwiGluCase {
  int64_t N, F;
  std::vector<float> inp, dout, a;  // a: the gate value of each output, for messages
};

// Rows of F gates (the sweep, zero-padded) with b and dout uniform in [-2, 2].
SwiGluCase make_swiglu(const std::vector<float>& gates, int64_t F, uint64_t seed) {
  SwiGluCase c;
  c.F = F;
  c.N = (static_cast<int64_t>(gates.size()) + F - 1) / F;
  Rng rng(seed);
  c.inp = rng.vec<float>(static_cast<size_t>(c.N * 2 * F), -2, 2);
  c.dout = rng.vec<float>(static_cast<size_t>(c.N * F), -2, 2);
  c.a.assign(static_cast<size_t>(c.N * F), 0.0f);
  for (size_t i = 0; i < gates.size(); ++i) c.a[i] = gates[i];
  for (int64_t r = 0; r < c.N; ++r)
    for (int64_t f = 0; f < F; ++f) c.inp[r * 2 * F + f] = c.a[r * F + f];
  return c;
}

struct SwiGluOut {
  std::vector<float> y, da, db;
};
SwiGluOut ref_swiglu(const SwiGluCase& c) {
  SwiGluOut o;
  const int64_t F = c.F;
  for (int64_t r = 0; r < c.N; ++r) {
    for (int64_t f = 0; f < F; ++f) {
      const float a = c.inp[r * 2 * F + f], b = c.inp[r * 2 * F + F + f], dy = c.dout[r * F + f];
      const float s = detmath::sigmoid(a);
      o.y.push_back((a * s) * b);
      o.da.push_back((dy * b) * (s * (1.0f + a * (1.0f - s))));
      o.db.push_back(dy * (a * s));
    }
  }
  return o;
}
SwiGluOut run_swiglu(const SwiGluCase& c) {
  SwiGluOut o;
  const int64_t N = c.N, F = c.F;
  o.y.resize(static_cast<size_t>(N * F));
  std::vector<float> d(static_cast<size_t>(N * 2 * F));
  swiglu_forward(o.y.data(), c.inp.data(), N, F);
  swiglu_backward(d.data(), c.dout.data(), c.inp.data(), N, F);
  for (int64_t r = 0; r < N; ++r) {
    o.da.insert(o.da.end(), d.begin() + r * 2 * F, d.begin() + r * 2 * F + F);
    o.db.insert(o.db.end(), d.begin() + r * 2 * F + F, d.begin() + (r + 1) * 2 * F);
  }
  return o;
}

void check_swiglu(const SwiGluCase& c, const SwiGluOut& want, const std::string& what) {
  const SwiGluOut got = run_swiglu(c);
  expect_same(got.y, want.y, c.a, what + " swiglu_forward");
  expect_same(got.da, want.da, c.a, what + " swiglu_backward da");
  expect_same(got.db, want.db, c.a, what + " swiglu_backward db");
}
void check_swiglu(const SwiGluCase& c, const std::string& what) { check_swiglu(c, ref_swiglu(c), what); }

struct GeluCase {
  std::vector<float> x, dy, y, g;  // inputs and reference outputs
};
GeluCase make_gelu(std::vector<float> x, std::vector<float> dy) {
  GeluCase c{std::move(x), std::move(dy), {}, {}};
  for (size_t i = 0; i < c.x.size(); ++i) {
    c.y.push_back(ref_gelu(c.x[i]));
    c.g.push_back(ref_gelu_grad(c.dy[i], c.x[i]));
  }
  return c;
}

void check_gelu(const GeluCase& c, const std::string& what) {
  const int64_t n = static_cast<int64_t>(c.x.size());
  std::vector<float> y(c.x.size()), g(c.x.size());
  gelu_forward(y.data(), c.x.data(), n);
  gelu_backward(g.data(), c.dy.data(), c.x.data(), n);
  expect_same(y, c.y, c.x, what + " gelu_forward");
  expect_same(g, c.g, c.x, what + " gelu_backward");
}
void check_gelu(const std::vector<float>& x, const std::vector<float>& dy, const std::string& what) {
  check_gelu(make_gelu(x, dy), what);
}

std::string path_name(ActivationPath p) { return vec_path_name(p); }

class ActivationPaths : public ::testing::TestWithParam<ActivationPath> {
 protected:
  void SetUp() override {
    if (!activation_path_supported(GetParam())) GTEST_SKIP() << "CPU lacks " << path_name(GetParam());
    set_activation_path(GetParam());
  }
  void TearDown() override { set_activation_path(ActivationPath::automatic); }
};

TEST_P(ActivationPaths, GeluSweepBitsEqualScalarDefinition) {
  static const GeluCase c = [] {  // the reference is computed once for all paths
    Rng rng(11);
    return make_gelu(gelu_inputs(), rng.vec<float>(gelu_inputs().size(), -2, 2));
  }();
  check_gelu(c, path_name(GetParam()));
}

TEST_P(ActivationPaths, SwiGluSweepBitsEqualScalarDefinition) {
  static const SwiGluCase c = make_swiglu(swiglu_inputs(), 4099, 12);
  static const SwiGluOut want = ref_swiglu(c);
  check_swiglu(c, want, path_name(GetParam()));
}

TEST_P(ActivationPaths, SpecialValuePairs) {
  // Every (x or a, b, dout) combination of special values: NaN/inf/0 interplay.
  const auto s = specials();
  std::vector<float> x, dy;
  for (float u : s)
    for (float v : s) {
      x.push_back(u);
      dy.push_back(v);
    }
  check_gelu(x, dy, path_name(GetParam()) + " specials");
  SwiGluCase c;
  c.N = static_cast<int64_t>(s.size());
  c.F = c.N * c.N;
  for (int64_t r = 0; r < c.N; ++r) {
    std::vector<float> a, b, d;
    for (float u : s)
      for (float v : s) {
        a.push_back(u);
        b.push_back(v);
        d.push_back(s[static_cast<size_t>(r)]);
      }
    c.inp.insert(c.inp.end(), a.begin(), a.end());
    c.inp.insert(c.inp.end(), b.begin(), b.end());
    c.dout.insert(c.dout.end(), d.begin(), d.end());
    c.a.insert(c.a.end(), a.begin(), a.end());
  }
  check_swiglu(c, path_name(GetParam()) + " specials");
}

TEST_P(ActivationPaths, RaggedLengthsAndThreads) {
  // Lengths around multiples of every vector width, below and above the OpenMP cut
  // (1 << 14 elements), under 1 and 2 threads; SwiGLU rows of ragged F.
  Rng rng(13);
  for (int threads : {1, 2}) {
    test::OmpThreads t(threads);
    const std::string what = path_name(GetParam()) + " threads=" + std::to_string(threads);
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 47, 64, 65, 16384 + 17, 40000 + 13}) {
      auto x = rng.vec<float>(static_cast<size_t>(n), -8, 8);
      x[static_cast<size_t>(n - 1)] = NAN;  // a fallback lane in the tail
      check_gelu(x, rng.vec<float>(static_cast<size_t>(n), -2, 2), what + " n=" + std::to_string(n));
    }
    for (int64_t F : {1, 3, 4, 5, 8, 13, 16, 17, 37, 1021}) {
      auto a = rng.vec<float>(static_cast<size_t>(F * (F > 100 ? 20 : 600)), -20, 20);
      a.back() = NAN;
      check_swiglu(make_swiglu(a, F, 14), what + " F=" + std::to_string(F));
    }
  }
}

TEST_P(ActivationPaths, InPlace) {
  // out == inp for GeLU, dinp == dout / inp, swiglu dinp == inp; NaN lanes are
  // recomputed from loaded values, not from the overwritten memory.
  Rng rng(15);
  auto x = rng.vec<float>(1000, -8, 8);
  auto dy = rng.vec<float>(1000, -2, 2);
  x[5] = NAN;
  x[17] = INFINITY;
  std::vector<float> y(x.size()), g(x.size());
  gelu_forward(y.data(), x.data(), 1000);
  gelu_backward(g.data(), dy.data(), x.data(), 1000);
  auto a = x;
  gelu_forward(a.data(), a.data(), 1000);
  EXPECT_TRUE(test::same_bits(a, y));
  a = dy;
  gelu_backward(a.data(), a.data(), x.data(), 1000);
  EXPECT_TRUE(test::same_bits(a, g));
  a = x;
  gelu_backward(a.data(), dy.data(), a.data(), 1000);
  EXPECT_TRUE(test::same_bits(a, g));
  std::vector<float> d(x.size());
  swiglu_backward(d.data(), dy.data(), x.data(), 20, 25);
  a = x;
  swiglu_backward(a.data(), dy.data(), a.data(), 20, 25);
  EXPECT_TRUE(test::same_bits(a, d));
}

TEST_P(ActivationPaths, NaNPayloadsWithOneNaNSource) {
  // Where at most one NaN source meets (one special input among ordinary ones), even the
  // NaN payload is fixed by the expression: bits must match exactly, NaNs included.
  // (Where two different NaNs meet, the payload depends on operand order, which the
  // compiler may swap in a commutative op: not promised by the scalar code either.)
  std::vector<float> x, dy;
  SwiGluCase c;
  c.N = 1;
  std::vector<float> a, b;
  for (float v : specials()) {
    x.insert(x.end(), {v, 0.3f});
    dy.insert(dy.end(), {0.75f, v});
    a.insert(a.end(), {v, 0.4f, -0.6f});
    b.insert(b.end(), {0.7f, v, 0.9f});
    c.dout.insert(c.dout.end(), {-1.3f, 1.1f, v});
  }
  const GeluCase g = make_gelu(x, dy);
  std::vector<float> y(x.size()), gr(x.size());
  gelu_forward(y.data(), x.data(), static_cast<int64_t>(x.size()));
  gelu_backward(gr.data(), dy.data(), x.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(test::same_bits(y, g.y));
  EXPECT_TRUE(test::same_bits(gr, g.g));
  c.F = static_cast<int64_t>(a.size());
  c.inp = a;
  c.inp.insert(c.inp.end(), b.begin(), b.end());
  c.a = a;
  const SwiGluOut want = ref_swiglu(c), got = run_swiglu(c);
  EXPECT_TRUE(test::same_bits(got.y, want.y));
  EXPECT_TRUE(test::same_bits(got.da, want.da));
  EXPECT_TRUE(test::same_bits(got.db, want.db));
}

INSTANTIATE_TEST_SUITE_P(Cpu, ActivationPaths,
                         ::testing::Values(ActivationPath::scalar, ActivationPath::sse2, ActivationPath::avx2,
                                           ActivationPath::avx512),
                         [](const ::testing::TestParamInfo<ActivationPath>& i) { return path_name(i.param); });

}  // namespace
}  // namespace rcts::cpu
