// Helpers shared by the CPU kernel tests: a seeded random source, central finite
// differences, closeness/bitwise comparisons and an OpenMP thread-count guard.
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace rcts::test {

// splitmix64: deterministic, platform-independent random numbers for test inputs.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1p-53); }
  template <typename T>
  std::vector<T> vec(size_t n, double lo = -1.0, double hi = 1.0) {
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(uniform(lo, hi));
    return v;
  }

 private:
  uint64_t s_;
};

// Central differences of a scalar loss L(x), perturbing x in place (restored afterwards).
inline std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& loss,
                                        std::vector<double> x, double h = 1e-6) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    x[i] = xi + h;
    const double lp = loss(x);
    x[i] = xi - h;
    const double lm = loss(x);
    x[i] = xi;
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// |a - b| <= atol + rtol * |b| elementwise; reports the first few failures.
template <typename A, typename B>
void expect_close(const std::vector<A>& a, const std::vector<B>& b, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: " << x << " vs " << y;
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " elements differ";
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// Sets the OpenMP thread count for a scope and restores the previous one.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : prev_(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~OmpThreads() { omp_set_num_threads(prev_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int prev_;
};

// The raw bytes of one or more vectors, concatenated: results compared bit for bit.
using Bytes = std::vector<unsigned char>;
template <typename... Vs>
Bytes to_bytes(const Vs&... vs) {
  Bytes out(((vs.size() * sizeof(vs[0])) + ... + 0));
  size_t at = 0;
  auto put = [&](const auto& v) {
    const size_t nb = v.size() * sizeof(v[0]);
    if (nb) std::memcpy(out.data() + at, v.data(), nb);
    at += nb;
  };
  (put(vs), ...);
  return out;
}

// Runs fn() under 1, 2 and 3 OpenMP threads and expects bitwise-equal results.
inline void expect_thread_independent(const std::function<Bytes()>& fn, const std::string& what) {
  Bytes ref;
  {
    OmpThreads t(1);
    ref = fn();
  }
  ASSERT_FALSE(ref.empty()) << what;
  for (int n : {2, 3}) {
    OmpThreads t(n);
    const Bytes got = fn();
    EXPECT_TRUE(got == ref) << what << ": bits differ between 1 and " << n << " threads";
  }
}

}  // namespace rcts::test
