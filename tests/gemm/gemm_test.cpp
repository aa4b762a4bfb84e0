// GEMM conformance: every path gives exactly the bits of the documented accumulation
// order (gemm.hpp) over many shapes, ragged edges, K-block boundaries, transposes,
// accumulate modes and padded leading dimensions; results do not depend on the
// thread count; the order itself is pinned by hand-computed cases; and the products
// are accurate against a long-double reference.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "gemm_test_util.hpp"
#include "kernels/cpu/gemm.hpp"

namespace rcts::cpu {
namespace {

using gemm_test::Mat;
using gemm_test::PathGuard;
using gemm_test::Rng;

constexpr int64_t KC = kGemmKC;

std::vector<GemmPath> float_paths() {
  std::vector<GemmPath> p{GemmPath::portable};
  if (gemm_avx2_supported()) p.push_back(GemmPath::avx2);
  if (gemm_avx512_supported()) p.push_back(GemmPath::avx512);
  return p;
}
const char* path_name(GemmPath p) { return gemm_path_name(p); }

// One case: random operands (leading dims padded by `pad`, padding NaN), reference vs
// each requested path on the same initial C.
template <typename T>
::testing::AssertionResult check_case(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, bool acc,
                                      int64_t pad, const std::vector<GemmPath>& paths, uint64_t seed) {
  Rng rng{seed};
  Mat<T> a(ta == Trans::N ? M : K, ta == Trans::N ? K : M, pad, rng);
  Mat<T> b(tb == Trans::N ? K : N, tb == Trans::N ? N : K, pad + 1, rng);
  Mat<T> c0(M, N, pad + 2, rng);
  std::vector<T> want = c0.v;
  gemm_test::reference_gemm<T>(ta, tb, M, N, K, a.data(), a.ld, b.data(), b.ld, want.data(), c0.ld, acc);
  for (GemmPath p : paths) {
    set_gemm_path(p);
    std::vector<T> got = c0.v;
    gemm<T>(ta, tb, M, N, K, a.data(), a.ld, b.data(), b.ld, got.data(), c0.ld, acc);
    const std::string what = std::string(path_name(p)) + " " + gemm_test::name(ta) + gemm_test::name(tb) +
                             " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" +
                             std::to_string(K) + " acc=" + std::to_string(acc) + " pad=" + std::to_string(pad);
    auto r = gemm_test::same_bits(want, got, c0.ld, what);
    if (!r) return r;
  }
  return ::testing::AssertionSuccess();
}

const int64_t kSizes[] = {1, 2, 3, 5, 7, 16, 17, 31, 33, 64, 100, 257, 300};
const int64_t kKs[] = {1, 2, 3, 5, 7, 16, 17, 31, 33, 64, 100, KC - 1, KC, KC + 1, 300, 2 * KC - 1, 2 * KC, 2 * KC + 3};

class GemmSweep : public ::testing::TestWithParam<std::tuple<Trans, Trans>> {};

// Every M, N in kSizes with every K in kKs while M*N*K stays small, plus large
// shapes that put ragged M, N and K-block edges together.
TEST_P(GemmSweep, FloatBitwiseEqualsReference) {
  PathGuard guard;
  const auto [ta, tb] = GetParam();
  const auto paths = float_paths();
  int cases = 0;
  uint64_t seed = 1;
  for (int64_t M : kSizes)
    for (int64_t N : kSizes)
      for (int64_t K : kKs) {
        if (M * N * K > 100000) continue;
        for (bool acc : {false, true}) {
          const int64_t pad = (M + N + K + acc) % 3 == 0 ? 0 : (M + 2 * N + K) % 5 + 1;
          ASSERT_TRUE(check_case<float>(ta, tb, M, N, K, acc, pad, paths, seed++));
          ++cases;
        }
      }
  const int64_t big[][3] = {{257, 33, KC - 1}, {31, 300, KC + 1}, {100, 65, 2 * KC + 3},
                            {7, 300, 3 * KC + 17}, {300, 17, KC},   {64, 64, 2 * KC},
                            {3, 4100, KC + 1}};  // N > 4096: more than one packed B panel
  for (const auto& s : big)
    for (bool acc : {false, true}) {
      ASSERT_TRUE(check_case<float>(ta, tb, s[0], s[1], s[2], acc, 3, paths, seed++));
      ++cases;
    }
  EXPECT_GT(cases, 1500);
}

TEST_P(GemmSweep, DoubleBitwiseEqualsReference) {
  const auto [ta, tb] = GetParam();
  const int64_t sizes[] = {1, 3, 7, 17, 33, 64};
  const int64_t ks[] = {1, 5, 31, KC - 1, KC, KC + 1, 2 * KC + 3};
  uint64_t seed = 1000;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : ks)
        for (bool acc : {false, true})
          ASSERT_TRUE(check_case<double>(ta, tb, M, N, K, acc, (M + N) % 3, {GemmPath::automatic}, seed++));
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, GemmSweep,
                         ::testing::Combine(::testing::Values(Trans::N, Trans::T),
                                            ::testing::Values(Trans::N, Trans::T)),
                         [](const auto& info) {
                           return std::string(gemm_test::name(std::get<0>(info.param))) +
                                  gemm_test::name(std::get<1>(info.param));
                         });

// Restores OpenMP's thread count when a test ends.
struct ThreadGuard {
  int saved = omp_get_max_threads();
  ~ThreadGuard() { omp_set_num_threads(saved); }
};

// Thread count changes only who computes which tile, never the bits. Shapes are big
// enough that both paths really use every thread; the AVX2 path then splits rows
// (tall C) or also columns (C with only one or two 6-row strips), over one or more
// K blocks and, for N > 4096, more than one packed B panel.
TEST(Gemm, ThreadCountDoesNotChangeBits) {
  PathGuard guard;
  ThreadGuard threads;
  // Each has > 3 * 2^20 multiply-adds, the AVX2 path's minimum for three threads.
  const int64_t shapes[][3] = {{150, 100, 2 * KC + 3}, {6, 1000, 600}, {2, 2100, 3 * KC + 1},
                               {259, 35, 400},         {2, 4200, 2 * KC + 1}};
  for (GemmPath p : float_paths())
    for (const auto& s : shapes)
      for (Trans ta : {Trans::N, Trans::T})
        for (Trans tb : {Trans::N, Trans::T}) {
          const int64_t M = s[0], N = s[1], K = s[2];
          Rng rng{static_cast<uint64_t>(M * 7 + N)};
          Mat<float> a(ta == Trans::N ? M : K, ta == Trans::N ? K : M, 1, rng);
          Mat<float> b(tb == Trans::N ? K : N, tb == Trans::N ? N : K, 0, rng);
          Mat<float> c0(M, N, 2, rng);
          set_gemm_path(p);
          std::vector<std::vector<float>> out;
          for (int nt : {1, 2, 3}) {
            omp_set_num_threads(nt);
            out.push_back(c0.v);
            gemm<float>(ta, tb, M, N, K, a.data(), a.ld, b.data(), b.ld, out.back().data(), c0.ld, true);
          }
          const std::string what = std::string(path_name(p)) + " " + gemm_test::name(ta) +
                                   gemm_test::name(tb) + " M=" + std::to_string(M) + " N=" + std::to_string(N);
          ASSERT_TRUE(gemm_test::same_bits(out[0], out[1], c0.ld, what + " 1 vs 2 threads"));
          ASSERT_TRUE(gemm_test::same_bits(out[0], out[2], c0.ld, what + " 1 vs 3 threads"));
        }
}

// The order itself, on values whose results are known exactly. With a = 1 and
// b = [1, 0 x 255, 2^-24 x 256] (K = 512): block 0 sums to 1, block 1 to 2^-16
// (256 exact additions of 2^-24), so the result is 1 + 2^-16. One unblocked chain
// would give 1, because 1 + 2^-24 rounds back to 1 (a tie, to even) every time.
TEST(GemmOrder, KBlocksAreSummedSeparately) {
  PathGuard guard;
  const int64_t K = 2 * KC;
  std::vector<float> a(K, 1.0f), b(K, 0.0f);
  b[0] = 1.0f;
  for (int64_t k = KC; k < K; ++k) b[k] = std::ldexp(1.0f, -24);
  for (GemmPath p : float_paths()) {
    set_gemm_path(p);
    float c = 123.0f;
    gemm<float>(Trans::N, Trans::N, 1, 1, K, a.data(), K, b.data(), 1, &c, 1, false);
    EXPECT_EQ(c, 1.0f + std::ldexp(1.0f, -16)) << path_name(p);
  }
}

// accumulate adds the block sums to C one at a time: ((C + s0) + s1) with C = 1 and
// s0 = s1 = 2^-24 is 1 (two ties to even), while C + (s0 + s1) would be 1 + 2^-23.
// Also checked on a 7x19 tile so the vector stores and the ragged-edge stores agree.
TEST(GemmOrder, AccumulateAddsBlockSumsIntoCInOrder) {
  PathGuard guard;
  const int64_t M = 7, N = 19, K = KC + 1;
  std::vector<float> a(M * K, 0.0f), b(K * N, 1.0f);
  for (int64_t i = 0; i < M; ++i) {
    a[i * K + 0] = std::ldexp(1.0f, -24);   // block 0: s0 = 2^-24
    a[i * K + KC] = std::ldexp(1.0f, -24);  // block 1: s1 = 2^-24
  }
  for (GemmPath p : float_paths()) {
    set_gemm_path(p);
    std::vector<float> c(M * N, 1.0f);
    gemm<float>(Trans::N, Trans::N, M, N, K, a.data(), K, b.data(), N, c.data(), N, true);
    for (float x : c) ASSERT_EQ(x, 1.0f) << path_name(p);
  }
}

// A block sum that underflows to -0.0 stays -0.0 without accumulate (result = s0, not
// 0 + s0); with accumulate onto +0.0 it becomes +0.0. K == 0 gives +0.0 or C.
TEST(GemmOrder, SignedZeroAndEmptyK) {
  PathGuard guard;
  const float a = -1e-30f, b = 1e-30f;  // exact product -1e-60 rounds to -0.0
  for (GemmPath p : float_paths()) {
    set_gemm_path(p);
    float c = 5.0f;
    gemm<float>(Trans::N, Trans::N, 1, 1, 1, &a, 1, &b, 1, &c, 1, false);
    EXPECT_EQ(gemm_test::bits_of(c), 0x80000000u) << path_name(p);
    c = 0.0f;
    gemm<float>(Trans::N, Trans::N, 1, 1, 1, &a, 1, &b, 1, &c, 1, true);
    EXPECT_EQ(gemm_test::bits_of(c), 0u) << path_name(p);
    float cs[4] = {-0.0f, 2.0f, 3.0f, 4.0f};
    gemm<float>(Trans::N, Trans::T, 2, 2, 0, nullptr, 1, nullptr, 1, cs, 2, true);
    EXPECT_EQ(gemm_test::bits_of(cs[0]), 0x80000000u);
    EXPECT_EQ(cs[3], 4.0f);
    gemm<float>(Trans::N, Trans::T, 2, 2, 0, nullptr, 1, nullptr, 1, cs, 2, false);
    for (float x : cs) EXPECT_EQ(gemm_test::bits_of(x), 0u) << path_name(p);
  }
}

// Accuracy against a long-double product: |C - exact| <= 2 K u sum_k |a_ik b_kj|
// (a loose multiple of the standard gamma_K bound), and not trivially exact.
template <typename T>
void check_accuracy(int64_t M, int64_t N, int64_t K) {
  Rng rng{77};
  Mat<T> a(M, K, 0, rng), b(N, K, 0, rng);
  std::vector<T> c(M * N);
  gemm<T>(Trans::N, Trans::T, M, N, K, a.data(), K, b.data(), K, c.data(), N, false);
  const long double u = std::numeric_limits<T>::epsilon() / 2;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      long double exact = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const long double p = static_cast<long double>(a.v[i * K + k]) * b.v[j * K + k];
        exact += p;
        mag += std::fabs(p);
      }
      ASSERT_LE(std::fabs(static_cast<long double>(c[i * N + j]) - exact), 2 * K * u * mag)
          << "C[" << i << "][" << j << "] M=" << M << " N=" << N << " K=" << K;
    }
}

TEST(GemmAccuracy, FloatAndDoubleCloseToLongDouble) {
  for (GemmPath p : float_paths()) {
    PathGuard guard;
    set_gemm_path(p);
    check_accuracy<float>(13, 37, 3 * KC + 5);
  }
  check_accuracy<double>(13, 37, 3 * KC + 5);
}

TEST(GemmApi, PathSelection) {
  PathGuard guard;
  EXPECT_NE(active_gemm_path(), GemmPath::automatic);
  EXPECT_EQ(active_gemm_path(), gemm_avx512_supported() ? GemmPath::avx512
                                 : gemm_avx2_supported() ? GemmPath::avx2
                                                         : GemmPath::portable);
  set_gemm_path(GemmPath::portable);
  EXPECT_EQ(active_gemm_path(), GemmPath::portable);
  for (auto [p, ok] : {std::pair{GemmPath::avx2, gemm_avx2_supported()},
                       std::pair{GemmPath::avx512, gemm_avx512_supported()}}) {
    if (ok) {
      set_gemm_path(p);
      EXPECT_EQ(active_gemm_path(), p);
    } else {
      EXPECT_THROW(set_gemm_path(p), std::runtime_error) << gemm_path_name(p);
    }
  }
}

// The sweeps above compare every path this CPU has; say so when one cannot run.
TEST(GemmApi, AvailablePathsListed) {
  if (!gemm_avx2_supported()) GTEST_SKIP() << "CPU lacks AVX2+FMA: only the portable path is tested";
  if (!gemm_avx512_supported()) GTEST_SKIP() << "CPU lacks AVX-512: the avx512 path is not tested";
  EXPECT_EQ(float_paths().size(), 3u);
}

TEST(GemmApi, RejectsBadArguments) {
  float x[16] = {};
  EXPECT_THROW(gemm<float>(Trans::N, Trans::N, -1, 2, 2, x, 2, x, 2, x, 2, false), std::invalid_argument);
  // op(A) = A is M x K: lda must be >= K.
  EXPECT_THROW(gemm<float>(Trans::N, Trans::N, 2, 2, 3, x, 2, x, 2, x, 2, false), std::invalid_argument);
  // op(A) = A^T: A is K x M, lda must be >= M.
  EXPECT_THROW(gemm<float>(Trans::T, Trans::N, 3, 2, 1, x, 2, x, 2, x, 2, false), std::invalid_argument);
  EXPECT_THROW(gemm<float>(Trans::N, Trans::T, 2, 3, 2, x, 2, x, 1, x, 3, false), std::invalid_argument);
  EXPECT_THROW(gemm<double>(Trans::N, Trans::N, 2, 3, 2, nullptr, 2, nullptr, 3, nullptr, 2, false),
               std::invalid_argument);
  EXPECT_NO_THROW(gemm<float>(Trans::N, Trans::N, 0, 3, 2, nullptr, 2, nullptr, 3, nullptr, 3, false));
}

// A batch is `batch` independent products: each equals one gemm() call on its operands,
// on every path, whether the batch runs threaded (large) or on one thread (small), and
// an explicit path argument overrides the process-wide setting for that call.
TEST(GemmBatched, EachProductEqualsItsOwnGemmOnEveryPath) {
  for (const auto& [M, N, K, batch] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{3, 5, 7, 4},
                                       {33, 17, 300, 6}, {64, 64, 64, 2}, {5, 3, 2, 1}}) {
    Rng rng{static_cast<uint64_t>(M * 1000 + batch)};
    Mat<float> a(batch * M, K, 0, rng), b(batch * N, K, 0, rng), c(batch * M, N, 0, rng);
    for (GemmPath p : float_paths()) {
      std::vector<float> want = c.v, got = c.v;
      for (int64_t i = 0; i < batch; ++i)
        gemm<float>(Trans::N, Trans::T, M, N, K, a.data() + i * M * K, K, b.data() + i * N * K, K,
                    want.data() + i * M * N, N, true, p);
      gemm_batched<float>(Trans::N, Trans::T, M, N, K, a.data(), K, M * K, b.data(), K, N * K, got.data(), N, M * N,
                          batch, true, p);
      EXPECT_TRUE(gemm_test::same_bits(want, got, N, std::string(path_name(p)) + " batched"));
    }
  }
}

TEST(GemmApi, ExplicitPathOverridesTheProcessSettingForOneCall) {
  PathGuard guard;
  Rng rng{5};
  Mat<float> a(17, 300, 0, rng), b(300, 33, 0, rng);
  std::vector<float> portable(17 * 33), forced(17 * 33);
  set_gemm_path(GemmPath::portable);
  gemm<float>(Trans::N, Trans::N, 17, 33, 300, a.data(), 300, b.data(), 33, portable.data(), 33, false);
  for (GemmPath p : float_paths()) {
    gemm<float>(Trans::N, Trans::N, 17, 33, 300, a.data(), 300, b.data(), 33, forced.data(), 33, false, p);
    EXPECT_TRUE(gemm_test::same_bits(portable, forced, 33, path_name(p)));
  }
  EXPECT_EQ(active_gemm_path(), GemmPath::portable) << "a per-call path must not change the process setting";
  if (!gemm_avx512_supported()) {
    EXPECT_THROW(gemm<float>(Trans::N, Trans::N, 1, 1, 1, a.data(), 300, b.data(), 33, forced.data(), 33, false,
                             GemmPath::avx512),
                 std::runtime_error);
  }
  EXPECT_THROW(gemm_batched<float>(Trans::N, Trans::N, 1, 1, 1, a.data(), 1, 1, b.data(), 1, 1, forced.data(), 1, 1,
                                   -1, false),
               std::invalid_argument);
}

}  // namespace
}  // namespace rcts::cpu
