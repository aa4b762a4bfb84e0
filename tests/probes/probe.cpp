// Cross-compiler bit probe: prints the exact output bits of detmath and of the CPU
// kernels (layernorm, causal softmax, dropout, GeLU, SwiGLU, element-wise, bf16) on fixed
// inputs. run_probe.sh builds this one file with several compilers and optimisation
// levels (always -ffp-contract=off) and fails if any two builds print different text,
// i.e. if any result depends on the compiler, the optimisation level or the thread count.
//
// Standalone on purpose: it includes the kernel sources directly so it needs no CMake
// target, only -I<project root> and OpenMP. Inputs come from integer arithmetic
// (splitmix64), so they are identical everywhere. Output: one line per check with an
// FNV-1a digest of all output bits and the first values in hex.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common/bf16.hpp"
#include "kernels/common/detmath.hpp"
#include "kernels/common/dropout_rule.hpp"
#include "kernels/cpu/activation.cpp"
#include "kernels/cpu/dropout.cpp"
#include "kernels/cpu/elementwise.cpp"
#include "kernels/cpu/layernorm.cpp"
#include "kernels/cpu/softmax.cpp"
#include "kernels/cpu/vec_path.cpp"

namespace {

uint64_t g_rng = 0;
uint64_t next_u64() {
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Uniform in [lo, hi) from 24 random bits: exact in float and double.
template <typename T>
std::vector<T> inputs(size_t n, uint64_t seed, double lo, double hi) {
  g_rng = seed;
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(lo + (hi - lo) * static_cast<double>(next_u64() >> 40) * 0x1p-24);
  return v;
}

template <typename T>
void report(const char* what, const std::vector<T>& v) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  std::printf("%-28s n=%-7zu fnv=%016" PRIx64 " first:", what, v.size(), h);
  for (size_t i = 0; i < v.size() && i < 3; ++i) {
    uint64_t b = 0;
    std::memcpy(&b, &v[i], sizeof(T));
    std::printf(" %0*" PRIx64, static_cast<int>(2 * sizeof(T)), b);
  }
  std::printf("\n");
}

template <typename T>
void probe_detmath(const char* tname) {
  const size_t n = 4096;
  struct Fn {
    const char* name;
    T (*f)(T);
    double lo, hi;
  };
  const Fn fns[] = {
      {"exp", [](T x) { return rcts::detmath::exp(x); }, -110, 100},
      {"expm1", [](T x) { return rcts::detmath::expm1(x); }, -3, 3},
      {"log", [](T x) { return rcts::detmath::log(x); }, 0, 50},
      {"tanh", [](T x) { return rcts::detmath::tanh(x); }, -6, 6},
      {"erf", [](T x) { return rcts::detmath::erf(x); }, -5, 5},
      {"sigmoid", [](T x) { return rcts::detmath::sigmoid(x); }, -30, 30},
  };
  for (const auto& fn : fns) {
    auto x = inputs<T>(n, 1, fn.lo, fn.hi);
    for (size_t i = 0; i < n; i += 7) x[i] = x[i] * static_cast<T>(1e-3);  // some small arguments
    for (auto& v : x) v = fn.f(v);
    report((std::string("detmath.") + fn.name + "." + tname).c_str(), x);
  }
}

template <typename T>
void probe_kernels(const char* tname) {
  using namespace rcts::cpu;
  const std::string t = std::string(".") + tname;
  {  // layernorm: 96 x 200 (above the threading threshold)
    const int64_t N = 96, C = 200;
    const auto x = inputs<T>(N * C, 2, -3, 3), w = inputs<T>(C, 3, 0.5, 1.5), b = inputs<T>(C, 4, -1, 1),
               dy = inputs<T>(N * C, 5, -1, 1);
    std::vector<T> y(N * C), dx(N * C), dw(C, T(0.25)), db(C, T(-0.5));
    layernorm_forward(y.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
    layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), N, C, 1e-5);
    report(("layernorm.out" + t).c_str(), y);
    report(("layernorm.dinp" + t).c_str(), dx);
    report(("layernorm.dweight" + t).c_str(), dw);
    report(("layernorm.dbias" + t).c_str(), db);
  }
  {  // causal softmax
    const int64_t BH = 6, S = 64;
    const auto x = inputs<T>(BH * S * S, 6, -8, 8), dy = inputs<T>(BH * S * S, 7, -1, 1);
    std::vector<T> y(x.size()), dx(x.size());
    softmax_causal_forward(y.data(), x.data(), BH, S);
    softmax_causal_backward(dx.data(), dy.data(), y.data(), BH, S);
    report(("softmax.out" + t).c_str(), y);
    report(("softmax.dinp" + t).c_str(), dx);
  }
  {  // GeLU and SwiGLU
    const int64_t N = 64, F = 160;
    const auto x = inputs<T>(N * 2 * F, 8, -6, 6), dy = inputs<T>(N * 2 * F, 9, -1, 1);
    std::vector<T> g(x.size()), dg(x.size()), s(N * F), ds(x.size());
    gelu_forward(g.data(), x.data(), static_cast<int64_t>(x.size()));
    gelu_backward(dg.data(), dy.data(), x.data(), static_cast<int64_t>(x.size()));
    swiglu_forward(s.data(), x.data(), N, F);
    swiglu_backward(ds.data(), dy.data(), x.data(), N, F);
    report(("gelu.out" + t).c_str(), g);
    report(("gelu.dinp" + t).c_str(), dg);
    report(("swiglu.out" + t).c_str(), s);
    report(("swiglu.dinp" + t).c_str(), ds);
  }
  {  // dropout apply and element-wise
    const int64_t n = 40001;
    std::vector<uint8_t> m(n);
    dropout_mask(m.data(), n, 0.1, 1234, 5);
    const auto x = inputs<T>(n, 10, -2, 2), bias = inputs<T>(41, 11, -1, 1);
    std::vector<T> y(n), dx(n), ba(n), db(41, T(0));
    dropout_forward(y.data(), x.data(), m.data(), n, 0.1);
    dropout_backward(dx.data(), y.data(), m.data(), n, 0.1);
    bias_add(ba.data(), x.data(), bias.data(), n / 41, 41);
    bias_backward(db.data(), x.data(), n / 41, 41);
    report(("dropout.out" + t).c_str(), y);
    report(("dropout.dinp" + t).c_str(), dx);
    report(("bias_add.out" + t).c_str(), ba);
    report(("bias_backward.dbias" + t).c_str(), db);
  }
}

}  // namespace

int main() {
  probe_detmath<float>("f32");
  probe_detmath<double>("f64");
  probe_kernels<float>("f32");
  probe_kernels<double>("f64");
  {
    const int64_t n = 100003;
    std::vector<uint8_t> m(n);
    rcts::cpu::dropout_mask(m.data(), n, 0.3, 0xfeedfacecafebeefull, 1ull << 40);
    report("dropout.mask", m);
    auto x = inputs<float>(n, 12, -1e5, 1e5);
    rcts::cpu::round_to_bf16(x.data(), n);
    report("round_to_bf16", x);
  }
  return 0;
}
