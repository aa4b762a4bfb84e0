// The dropout-mask and float causal-softmax paths (scalar, sse2, avx2, avx512; forced with
// set_dropout_path / set_softmax_path, skipped where the CPU lacks one) against scalar
// reference loops written here, bit for bit:
//  - masks: Philox4x32-10 block by block (element i = word i % 4 of block offset + i / 4,
//    kept iff (word >> 8) >= floor(p * 2^24 + 0.5)) for many seeds, offsets (low-word carry
//    inside a call, 2^64 wrap-around), lengths (ragged: not multiples of 4 or of any
//    vector group), p (0, 1, thresholds 0 and 2^24), 1 and 2 OpenMP threads, no byte
//    written past n;
//  - softmax: m = max (from x[0], `if (x[j] > m)`), exp = detmath::exp, a sequential sum in
//    column order, one division per element, zeros above the diagonal; S = 1..70 and 257,
//    inputs with -inf, +inf, NaN, huge and tiny values, ties, signed zeros, arguments in
//    exp's subnormal range; 1 and 2 threads; in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/common/bf16.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/common/philox.hpp"
#include "kernels/cpu/dropout.hpp"
#include "kernels/cpu/softmax.hpp"
#include "tests/kernels/kernel_test_util.hpp"

namespace rcts::cpu {
namespace {

using test::Rng;

const VecPath kPaths[] = {VecPath::scalar, VecPath::sse2, VecPath::avx2, VecPath::avx512};
const char* path_name(VecPath p) { return vec_path_name(p); }

// ------------------------------------------------------------------ dropout mask

// The rule, written out: Philox4x32-10 on counter (index lo, index hi, 0, 0), key (seed lo,
// seed hi); element i reads word i % 4 of block offset + i / 4.
std::vector<uint8_t> ref_mask(int64_t n, double p, uint64_t seed, uint64_t offset) {
  const uint32_t thr = static_cast<uint32_t>(p * 16777216.0 + 0.5);
  std::vector<uint8_t> m(static_cast<size_t>(n));
  for (int64_t b = 0; 4 * b < n; ++b) {
    const uint64_t idx = offset + static_cast<uint64_t>(b);
    const philox::Counter w =
        philox::philox4x32_10({static_cast<uint32_t>(idx), static_cast<uint32_t>(idx >> 32), 0u, 0u},
                              {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    for (int64_t k = 0; k < 4 && 4 * b + k < n; ++k) m[static_cast<size_t>(4 * b + k)] = (w[static_cast<size_t>(k)] >> 8) >= thr;
  }
  return m;
}

struct MaskCase {
  int64_t n;
  double p;
  uint64_t seed, offset;
  std::vector<uint8_t> want;
};

std::string describe(const MaskCase& c) {
  return "n=" + std::to_string(c.n) + " p=" + std::to_string(c.p) + " seed=" + std::to_string(c.seed) +
         " offset=" + std::to_string(c.offset);
}

const std::vector<MaskCase>& mask_cases() {
  static const std::vector<MaskCase> cases = [] {
    const double ps[] = {0.1, 0.5, 0.9, 0.0, 1.0, 0.3, 1e-9 /* threshold 0 */, 1.0 - 0x1p-26 /* threshold 2^24 */,
                         0x1p-24 /* threshold 1 */, 1.0 - 0x1p-23 /* threshold 2^24 - 2 */};
    const uint64_t seeds[] = {0, 1, 0xfeedfacecafebeefull, ~0ull, 0x00000000ffffffffull, 0x1234567890abcdefull};
    const uint64_t offsets[] = {0,           1,    5,    977, 0xffffffffull - 37 /* low word wraps in the call */,
                                ~0ull - 20 /* the 64-bit block index wraps */, 1ull << 40};
    const int64_t ns[] = {1,   2,   3,   4,   5,   7,   8,   9,   15,  16,   17,   31,   32,   33,   63,    64,
                          65,  127, 128, 129, 255, 256, 257, 511, 512, 513,  1000, 1023, 1025, 4099, 16391, 70001};
    std::vector<MaskCase> v;
    size_t k = 0;
    for (int64_t n : ns) {
      for (int rep = 0; rep < (n < 5000 ? 6 : 2); ++rep, ++k) {
        MaskCase c{n, ps[k % std::size(ps)], seeds[(k / 3) % std::size(seeds)], offsets[(k / 2) % std::size(offsets)], {}};
        c.want = ref_mask(c.n, c.p, c.seed, c.offset);
        v.push_back(std::move(c));
      }
    }
    return v;
  }();
  return cases;
}

class DropoutMaskPaths : public ::testing::TestWithParam<VecPath> {
 protected:
  void SetUp() override {
    if (!dropout_path_supported(GetParam()))
      GTEST_SKIP() << "CPU lacks " << path_name(GetParam());
    set_dropout_path(GetParam());
  }
  void TearDown() override { set_dropout_path(DropoutPath::automatic); }
};

TEST_P(DropoutMaskPaths, BytesEqualScalarRule) {
  for (int threads : {1, 2}) {
    test::OmpThreads t(threads);
    for (const MaskCase& c : mask_cases()) {
      // An odd start address and guard bytes after the end: nothing past n is written.
      std::vector<uint8_t> buf(static_cast<size_t>(c.n) + 1 + 80, 0xAB);
      dropout_mask(buf.data() + 1, c.n, c.p, c.seed, c.offset);
      int64_t bad = 0;
      for (int64_t i = 0; i < c.n; ++i) bad += buf[static_cast<size_t>(i + 1)] != c.want[static_cast<size_t>(i)];
      EXPECT_EQ(bad, 0) << path_name(GetParam()) << " threads=" << threads << " " << describe(c);
      bool guards = buf[0] == 0xAB;
      for (size_t i = static_cast<size_t>(c.n) + 1; i < buf.size(); ++i) guards = guards && buf[i] == 0xAB;
      EXPECT_TRUE(guards) << "wrote outside [0, n): " << describe(c);
    }
  }
}

TEST_P(DropoutMaskPaths, EveryStartAndLengthAroundAGroup) {
  // All (offset mod 64, n) with n in 1..200: every alignment of a call against the vector
  // groups; one seed, p = 0.5 (about half the bytes flip with any wrong word).
  const uint64_t seed = 0x0123456789abcdefull;
  const std::vector<uint8_t> all = ref_mask(64 * 4 + 200, 0.5, seed, 1000);
  for (uint64_t off = 0; off < 64; ++off) {
    for (int64_t n = 1; n <= 200; ++n) {
      std::vector<uint8_t> m(static_cast<size_t>(n), 9);
      dropout_mask(m.data(), n, 0.5, seed, 1000 + off);
      ASSERT_TRUE(std::equal(m.begin(), m.end(), all.begin() + static_cast<std::ptrdiff_t>(4 * off)))
          << path_name(GetParam()) << " offset=" << 1000 + off << " n=" << n;
    }
  }
}

TEST_P(DropoutMaskPaths, ThresholdTiesAreKept) {
  // p chosen so that threshold(p) == word >> 8 for one element (a tie: kept), and one
  // above it (dropped); random masks almost never meet a tie (2^-24 per element).
  const uint64_t seed = 0xabcdef0123456789ull, offset = 4242;
  const int64_t n = 301;
  for (int64_t i : {0, 1, 2, 3, 5, 66, 127, 128, 255, 300}) {
    const uint64_t idx = offset + static_cast<uint64_t>(i / 4);
    const philox::Counter w = philox::philox4x32_10(
        {static_cast<uint32_t>(idx), static_cast<uint32_t>(idx >> 32), 0u, 0u},
        {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    const uint32_t top = w[static_cast<size_t>(i % 4)] >> 8;
    if (top == 0 || top == 0xFFFFFFu) continue;
    for (uint32_t thr : {top, top + 1}) {
      const double p = static_cast<double>(thr) * 0x1p-24;  // threshold(p) == thr exactly
      std::vector<uint8_t> m(static_cast<size_t>(n), 9);
      dropout_mask(m.data(), n, p, seed, offset);
      EXPECT_EQ(m[static_cast<size_t>(i)], thr == top ? 1 : 0) << path_name(GetParam()) << " i=" << i;
      EXPECT_TRUE(m == ref_mask(n, p, seed, offset)) << path_name(GetParam()) << " i=" << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, DropoutMaskPaths, ::testing::ValuesIn(kPaths),
                         [](const ::testing::TestParamInfo<VecPath>& i) { return std::string(path_name(i.param)); });

// ------------------------------------------------------------------ causal softmax


// The definition (softmax.hpp), written out.
std::vector<float> ref_softmax(const std::vector<float>& inp, int64_t BH, int64_t S) {
  std::vector<float> out(inp.size());
  for (int64_t row = 0; row < BH * S; ++row) {
    const int64_t i = row % S;
    const float* x = inp.data() + row * S;
    float* y = out.data() + row * S;
    float m = x[0];
    for (int64_t j = 1; j <= i; ++j)
      if (x[j] > m) m = x[j];
    float sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      y[j] = detmath::exp(x[j] - m);
      sum += y[j];
    }
    for (int64_t j = 0; j <= i; ++j) y[j] = y[j] / sum;
    for (int64_t j = i + 1; j < S; ++j) y[j] = 0;
  }
  return out;
}

// Scores: a per-row mix of ordinary values and, by row, one kind of special. Rows hold at
// most one NaN source (one NaN payload, or +inf, or all -inf), so even NaN results have
// fixed bits and must match exactly.
std::vector<float> make_scores(int64_t BH, int64_t S, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(BH * S * S));
  for (int64_t row = 0; row < BH * S; ++row) {
    float* r = x.data() + row * S;
    const uint64_t kind = rng.next() % 12;
    const double scale = kind == 1 ? 1e3 : kind == 2 ? 1e-3 : 12.0;
    for (int64_t j = 0; j < S; ++j) r[j] = static_cast<float>(rng.uniform(-scale, scale));
    auto any = [&]() -> float& { return r[rng.next() % static_cast<uint64_t>(S)]; };
    switch (kind) {
      case 3:  // masked-style -inf entries (and sometimes a whole -inf row: NaN)
        for (int64_t j = 0; j < S; ++j)
          if (rng.next() % 3 == 0 || (row % 7 == 0)) r[j] = -INFINITY;
        break;
      case 4:  // one +inf (inf - inf = NaN)
        any() = INFINITY;
        break;
      case 5: {  // one NaN with a payload, sometimes at x[0]
        const float nan = bits_float(0x7fc00000u | static_cast<uint32_t>(rng.next() % 0x3fffff));
        (rng.next() % 3 == 0 ? r[0] : any()) = nan;
        break;
      }
      case 6:  // signed zeros and small negatives: the maximum is a zero of either sign
        for (int64_t j = 0; j < S; ++j) {
          const uint64_t u = rng.next() % 4;
          r[j] = u == 0 ? 0.0f : u == 1 ? -0.0f : static_cast<float>(-rng.uniform(0, 3));
        }
        break;
      case 7:  // ties: a few distinct values
        for (int64_t j = 0; j < S; ++j) r[j] = static_cast<float>(static_cast<int>(rng.next() % 3)) - 1.0f;
        break;
      case 8:  // huge magnitudes: differences overflow to -inf or hit exp's cut-offs
        for (int64_t j = 0; j < S; ++j) {
          const uint64_t u = rng.next() % 4;
          r[j] = u == 0 ? FLT_MAX : u == 1 ? -FLT_MAX : u == 2 ? 3e38f * static_cast<float>(rng.uniform(-1, 1))
                                                              : static_cast<float>(rng.uniform(-1, 1));
        }
        break;
      case 9:  // arguments x - m in [-110, 0]: exp's k < -100 two-step scaling, subnormal
               // results and the -104 cut-off
        for (int64_t j = 0; j < S; ++j) r[j] = static_cast<float>(rng.uniform(-110, 0));
        r[0] = 0.0f;
        break;
      case 10:  // subnormal and tiny inputs
        for (int64_t j = 0; j < S; ++j)
          r[j] = bits_float(static_cast<uint32_t>(rng.next() % 0x00900000u) | (rng.next() % 2 ? 0x80000000u : 0u));
        break;
      case 11:  // the maximum in the last column (the diagonal) or the first
        r[row % 2 ? static_cast<size_t>(row % S) : 0] = 20.0f;
        break;
      default:
        break;
    }
  }
  return x;
}

void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& x,
                      int64_t S, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int64_t bad = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    if (float_bits(got[k]) != float_bits(want[k]) && ++bad <= 5)
      ADD_FAILURE() << what << " row " << static_cast<int64_t>(k) / S << " col " << static_cast<int64_t>(k) % S
                    << " x=" << x[k] << " (0x" << std::hex << float_bits(x[k]) << "): got 0x" << float_bits(got[k])
                    << " want 0x" << float_bits(want[k]) << std::dec;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " differ";
}

struct SoftmaxCase {
  int64_t BH, S;
  std::vector<float> x, want;
};

const std::vector<SoftmaxCase>& softmax_cases() {
  static const std::vector<SoftmaxCase> cases = [] {
    std::vector<SoftmaxCase> v;
    for (int64_t S = 1; S <= 70; ++S) {
      const int64_t BH = S < 20 ? 5 : 2;
      SoftmaxCase c{BH, S, make_scores(BH, S, static_cast<uint64_t>(100 + S)), {}};
      c.want = ref_softmax(c.x, BH, S);
      v.push_back(std::move(c));
    }
    SoftmaxCase big{1, 257, make_scores(1, 257, 7), {}};  // over the OpenMP cut (1 << 14 elements)
    big.want = ref_softmax(big.x, 1, 257);
    v.push_back(std::move(big));
    SoftmaxCase wide{4, 70, make_scores(4, 70, 8), {}};
    wide.want = ref_softmax(wide.x, 4, 70);
    v.push_back(std::move(wide));
    return v;
  }();
  return cases;
}

class SoftmaxPaths : public ::testing::TestWithParam<VecPath> {
 protected:
  void SetUp() override {
    if (!softmax_path_supported(GetParam()))
      GTEST_SKIP() << "CPU lacks " << path_name(GetParam());
    set_softmax_path(GetParam());
  }
  void TearDown() override { set_softmax_path(SoftmaxPath::automatic); }
};

TEST_P(SoftmaxPaths, ForwardBitsEqualScalarDefinition) {
  for (int threads : {1, 2}) {
    test::OmpThreads t(threads);
    for (const SoftmaxCase& c : softmax_cases()) {
      const std::string what = std::string(path_name(GetParam())) + " threads=" + std::to_string(threads) +
                               " BH=" + std::to_string(c.BH) + " S=" + std::to_string(c.S);
      std::vector<float> y(c.x.size(), 42.0f);
      softmax_causal_forward(y.data(), c.x.data(), c.BH, c.S);
      expect_same_bits(y, c.want, c.x, c.S, what);
      std::vector<float> a = c.x;  // in place
      softmax_causal_forward(a.data(), a.data(), c.BH, c.S);
      expect_same_bits(a, c.want, c.x, c.S, what + " in place");
      if (HasFailure()) return;
    }
  }
}

TEST_P(SoftmaxPaths, OrdinaryScoresAcrossRowLengths) {
  // Plain attention-like scores (no specials), many row lengths per matrix.
  Rng rng(31);
  for (int64_t S : {1, 3, 8, 16, 17, 31, 32, 33, 48, 64, 65, 100, 128, 129}) {
    const int64_t BH = 3;
    const auto x = rng.vec<float>(static_cast<size_t>(BH * S * S), -9, 9);
    std::vector<float> y(x.size());
    softmax_causal_forward(y.data(), x.data(), BH, S);
    expect_same_bits(y, ref_softmax(x, BH, S), x, S, std::string(path_name(GetParam())) + " S=" + std::to_string(S));
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, SoftmaxPaths, ::testing::ValuesIn(kPaths),
                         [](const ::testing::TestParamInfo<VecPath>& i) { return std::string(path_name(i.param)); });

}  // namespace
}  // namespace rcts::cpu
