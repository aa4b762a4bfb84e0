// Every backend that claims the CPU's golden files computes every op of the backend
// interface with the CPU's bits (design §11): cpu-scalar (the portable/scalar kernel
// paths), cpu-exact (the exact tier's bodies in host loops) and, where a GPU is present,
// cuda (the same bodies on the device). Each op runs on the reference "cpu" backend and
// on the candidate over edge shapes (sizes that are not multiples of any vector width,
// K across the GEMM's 256-block boundary, single rows and columns), both compute types,
// and inputs with signed zeros, infinities, NaN, subnormals and large values. Results
// must be equal bit for bit; a NaN only has to be a NaN (payloads are unpromised where
// two NaN sources meet, design §2). Operands live in each backend's device memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/registry.hpp"
#include "kernels/common/bf16.hpp"

namespace rcts {
namespace {

// splitmix64 values in [-1, 1), with special values mixed in when `specials` is set.
class Data {
 public:
  explicit Data(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  template <typename T> std::vector<T> vec(size_t n, bool specials = false, double scale = 1.0) {
    std::vector<T> v(n);
    for (auto& x : v) {
      const uint64_t r = next();
      x = static_cast<T>((static_cast<double>(r >> 11) * 0x1p-52 - 1.0) * scale);
      if (specials && (r & 0xF) == 0) x = special<T>(static_cast<int>((r >> 4) % 8));
    }
    return v;
  }
  template <typename T> static T special(int k) {
    switch (k) {
      case 0: return T(0);
      case 1: return -T(0);
      case 2: return std::numeric_limits<T>::infinity();
      case 3: return -std::numeric_limits<T>::infinity();
      case 4: return std::numeric_limits<T>::quiet_NaN();
      case 5: return std::numeric_limits<T>::denorm_min() * T(3);
      case 6: return T(1e30);
      default: return T(-88.5);
    }
  }

 private:
  uint64_t s_;
};

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b); }
bool same(double a, double b) {
  uint64_t x, y;
  std::memcpy(&x, &a, 8);
  std::memcpy(&y, &b, 8);
  return (std::isnan(a) && std::isnan(b)) || x == y;
}
template <typename T> bool same(T a, T b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

template <typename T>
::testing::AssertionResult same_vec(const std::vector<T>& want, const std::vector<T>& got, const std::string& what) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < want.size(); ++i)
    if (!same(want[i], got[i])) {
      return ::testing::AssertionFailure() << what << ": first difference at " << i << " of " << want.size()
                                           << ": cpu " << +want[i] << ", candidate " << +got[i];
    }
  return ::testing::AssertionSuccess();
}

// A vector in a backend's device memory.
template <typename T> class On {
 public:
  On(Backend& b, const std::vector<T>& host) : b_(b), n_(host.size()) {
    p_ = b_.memory().allocate(Domain::device, capacity());
    b_.memory().copy(p_, Domain::device, reinterpret_cast<const std::byte*>(host.data()), Domain::host, bytes());
  }
  ~On() { b_.memory().deallocate(Domain::device, p_, capacity()); }
  On(const On&) = delete;
  On& operator=(const On&) = delete;
  T* p() { return reinterpret_cast<T*>(p_); }
  std::vector<T> host() const {
    std::vector<T> v(n_);
    b_.memory().copy(reinterpret_cast<std::byte*>(v.data()), Domain::host, p_, Domain::device, bytes());
    return v;
  }

 private:
  int64_t bytes() const { return static_cast<int64_t>(n_ * sizeof(T)); }
  int64_t capacity() const { return bytes() + 1; }  // never a zero-byte allocation
  Backend& b_;
  size_t n_;
  std::byte* p_;
};

class Equivalence : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const BackendEntry* e = find_backend(GetParam());
    ASSERT_NE(e, nullptr);
    if (const std::string why = e->unavailable(); !why.empty()) GTEST_SKIP() << GetParam() << ": " << why;
    cpu_ = make_backend("cpu");
    other_ = e->make();
  }
  // Runs `op(backend, buffers...)` on both backends over copies of the same inputs and
  // returns the outputs of both, in order.
  template <typename T, typename Op>
  void both(std::vector<std::vector<T>> buffers, Op&& op, const std::string& what) {
    auto run = [&](Backend& b) {
      std::vector<std::unique_ptr<On<T>>> on;
      for (const auto& v : buffers) on.push_back(std::make_unique<On<T>>(b, v));
      op(b, on);
      std::vector<std::vector<T>> out;
      for (auto& o : on) out.push_back(o->host());
      return out;
    };
    const auto want = run(*cpu_), got = run(*other_);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_vec(want[i], got[i], what + " buffer " + std::to_string(i)));
  }
  std::unique_ptr<Backend> cpu_, other_;
};

template <typename T> using Bufs = std::vector<std::unique_ptr<On<T>>>;

TEST_P(Equivalence, Gemm) {
  Data d(1);
  for (const auto& shape : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 5, 7}, {17, 33, 255}, {5, 3, 256},
                            {7, 9, 257}, {2, 3, 513}, {4, 4, 0}, {33, 17, 64}})
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T})
        for (bool acc : {false, true}) {
          // Plain locals, not structured bindings: clang 14 cannot capture those in a lambda.
          const int64_t M = std::get<0>(shape), N = std::get<1>(shape), K = std::get<2>(shape);
          const std::string what = "gemm " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
          auto run = [&]<typename T>() {
            const int64_t lda = (ta == Trans::N ? K : M) + 1, ldb = (tb == Trans::N ? N : K) + 2, ldc = N + 3;
            both<T>({d.vec<T>(static_cast<size_t>((ta == Trans::N ? M : K) * lda + 1)),
                     d.vec<T>(static_cast<size_t>((tb == Trans::N ? K : N) * ldb + 1)),
                     d.vec<T>(static_cast<size_t>(M * ldc))},
                    [&](Backend& b, Bufs<T>& x) {
                      b.ops<T>().gemm(ta, tb, M, N, K, x[0]->p(), lda, x[1]->p(), ldb, x[2]->p(), ldc, acc);
                    },
                    what);
          };
          run.template operator()<float>();
          run.template operator()<double>();
        }
}

TEST_P(Equivalence, GemmBatchedAndSpecialValues) {
  Data d(2);
  const int64_t M = 9, N = 7, K = 260, batch = 3;
  both<float>({d.vec<float>(batch * M * K, true), d.vec<float>(batch * N * K, true), d.vec<float>(batch * M * N)},
              [&](Backend& b, Bufs<float>& x) {
                b.f32().gemm_batched(Trans::N, Trans::T, M, N, K, x[0]->p(), K, M * K, x[1]->p(), K, N * K, x[2]->p(),
                                     N, M * N, batch, false);
              },
              "gemm_batched with specials");
}

TEST_P(Equivalence, LayerNorm) {
  Data d(3);
  for (int64_t C : {1, 3, 64, 65, 130})
    for (bool with_bias : {true, false}) {
      const int64_t N = 5;
      auto run = [&]<typename T>() {
        both<T>({d.vec<T>(N * C, false, 3.0), d.vec<T>(C), d.vec<T>(C), d.vec<T>(N * C)},
                [&](Backend& b, Bufs<T>& x) {
                  b.ops<T>().layernorm_forward(x[3]->p(), x[0]->p(), x[1]->p(), with_bias ? x[2]->p() : nullptr, N, C,
                                               1e-5);
                },
                "layernorm_forward C=" + std::to_string(C));
        both<T>({d.vec<T>(N * C), d.vec<T>(N * C, false, 3.0), d.vec<T>(C), d.vec<T>(N * C), d.vec<T>(C),
                 d.vec<T>(C)},
                [&](Backend& b, Bufs<T>& x) {
                  b.ops<T>().layernorm_backward(x[3]->p(), x[4]->p(), with_bias ? x[5]->p() : nullptr, x[0]->p(),
                                                x[1]->p(), x[2]->p(), N, C, 1e-5);
                },
                "layernorm_backward C=" + std::to_string(C));
      };
      run.template operator()<float>();
      run.template operator()<double>();
    }
}

TEST_P(Equivalence, CausalSoftmaxInPlaceAndNot) {
  Data d(4);
  for (int64_t S : {1, 2, 5, 17, 33}) {
    const int64_t BH = 3;
    auto run = [&]<typename T>() {
      both<T>({d.vec<T>(BH * S * S, false, 8.0), d.vec<T>(BH * S * S)},
              [&](Backend& b, Bufs<T>& x) { b.ops<T>().softmax_causal_forward(x[1]->p(), x[0]->p(), BH, S); },
              "softmax forward S=" + std::to_string(S));
      both<T>({d.vec<T>(BH * S * S, false, 8.0)},
              [&](Backend& b, Bufs<T>& x) { b.ops<T>().softmax_causal_forward(x[0]->p(), x[0]->p(), BH, S); },
              "softmax forward in place S=" + std::to_string(S));
      both<T>({d.vec<T>(BH * S * S), d.vec<T>(BH * S * S, false, 0.5)},
              [&](Backend& b, Bufs<T>& x) {
                b.ops<T>().softmax_causal_backward(x[0]->p(), x[0]->p(), x[1]->p(), BH, S);
              },
              "softmax backward in place S=" + std::to_string(S));
    };
    run.template operator()<float>();
    run.template operator()<double>();
  }
}

TEST_P(Equivalence, ElementWiseOpsWithSpecialValues) {
  Data d(5);
  for (int64_t n : {1, 3, 4, 17, 1003}) {
    auto run = [&]<typename T>() {
      const std::string sz = " n=" + std::to_string(n);
      both<T>({d.vec<T>(n, true, 6.0), d.vec<T>(n), d.vec<T>(n)},
              [&](Backend& b, Bufs<T>& x) {
                b.ops<T>().gelu_forward(x[1]->p(), x[0]->p(), n);
                b.ops<T>().gelu_backward(x[2]->p(), x[1]->p(), x[0]->p(), n);
              },
              "gelu" + sz);
      both<T>({d.vec<T>(2 * n, true, 6.0), d.vec<T>(n, true), d.vec<T>(n), d.vec<T>(2 * n)},
              [&](Backend& b, Bufs<T>& x) {
                b.ops<T>().swiglu_forward(x[2]->p(), x[0]->p(), 1, n);
                b.ops<T>().swiglu_backward(x[3]->p(), x[1]->p(), x[0]->p(), 1, n);
              },
              "swiglu" + sz);
      both<T>({d.vec<T>(n, true), d.vec<T>(n, true), d.vec<T>(n)},
              [&](Backend& b, Bufs<T>& x) {
                b.ops<T>().add(x[2]->p(), x[0]->p(), x[1]->p(), n);
                b.ops<T>().scale(x[0]->p(), x[0]->p(), static_cast<T>(0.3), n);
              },
              "add, scale" + sz);
      both<T>({d.vec<T>(3 * n, true), d.vec<T>(n), d.vec<T>(n)},
              [&](Backend& b, Bufs<T>& x) {
                b.ops<T>().bias_add(x[0]->p(), x[0]->p(), x[1]->p(), 3, n);
                b.ops<T>().bias_backward(x[2]->p(), x[0]->p(), 3, n);
              },
              "bias" + sz);
      const std::vector<int> order = {2, 0, 1};
      both<T>({d.vec<T>(3 * n, true), d.vec<T>(n)},
              [&](Backend& b, Bufs<T>& x) { b.ops<T>().sum_blocks(x[1]->p(), x[0]->p(), n, order); },
              "sum_blocks" + sz);
      both<T>({d.vec<T>(n), d.vec<T>(n), d.vec<T>(n), d.vec<T>(n)},
              [&](Backend& b, Bufs<T>& x) {
                b.ops<T>().mse_loss_backward(x[2]->p(), x[0]->p(), x[1]->p(), n);
                b.ops<T>().sgd_step(x[3]->p(), x[2]->p(), n, static_cast<T>(0.015625));
              },
              "loss grad, sgd" + sz);
      // The loss comes back to the host: compare the scalars.
      const auto y = d.vec<T>(n), t = d.vec<T>(n);
      On<T> cy(*cpu_, y), ct(*cpu_, t), oy(*other_, y), ot(*other_, t);
      EXPECT_TRUE(same(cpu_->ops<T>().mse_loss(cy.p(), ct.p(), n), other_->ops<T>().mse_loss(oy.p(), ot.p(), n)))
          << "mse_loss" << sz;
    };
    run.template operator()<float>();
    run.template operator()<double>();
  }
}

TEST_P(Equivalence, DropoutMaskAndApply) {
  for (int64_t n : {1, 5, 4097})
    for (double p : {0.0, 0.1, 0.5, 1.0})
      for (uint64_t offset : {uint64_t{0}, uint64_t{0xFFFFFFFF}, uint64_t{1} << 62}) {
        auto mask_of = [&](Backend& b) {
          On<uint8_t> m(b, std::vector<uint8_t>(static_cast<size_t>(n), 7));
          b.dropout_mask(m.p(), n, p, 0x1234567890abcdefull, offset);
          return m.host();
        };
        const auto mask = mask_of(*cpu_);
        EXPECT_TRUE(same_vec(mask, mask_of(*other_), "dropout_mask p=" + std::to_string(p)));
        Data d(6);
        const auto x = d.vec<float>(static_cast<size_t>(n), true);
        auto apply = [&](Backend& b) {
          On<float> in(b, x), out(b, std::vector<float>(x.size()));
          On<uint8_t> m(b, mask);
          b.f32().dropout_apply(out.p(), in.p(), m.p(), n, p);
          return out.host();
        };
        EXPECT_TRUE(same_vec(apply(*cpu_), apply(*other_), "dropout_apply p=" + std::to_string(p)));
      }
}

TEST_P(Equivalence, MoeRouterAndCombine) {
  Data d(7);
  const int64_t tokens = 6, experts = 5, k = 2, h = 7;
  auto run = [&]<typename T>() {
    // Row softmax, then top-k (with a tie planted in token 1) and the aux loss.
    auto logits = d.vec<T>(tokens * experts, false, 4.0);
    logits[experts + 1] = logits[experts + 3];
    both<T>({logits, d.vec<T>(tokens * experts), d.vec<T>(tokens * experts), d.vec<T>(tokens * experts)},
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().row_softmax_forward(x[1]->p(), x[0]->p(), tokens, experts);
              b.ops<T>().row_softmax_backward(x[3]->p(), x[2]->p(), x[1]->p(), tokens, experts);
            },
            "row softmax");
    auto probs = d.vec<T>(tokens * experts, false, 1.0);
    probs[2] = probs[4];
    auto topk_of = [&](Backend& b) {
      On<T> p(b, probs), w(b, std::vector<T>(tokens * k));
      On<int32_t> sel(b, std::vector<int32_t>(tokens * k));
      b.ops<T>().topk_select(sel.p(), w.p(), p.p(), tokens, experts, k);
      const T aux = b.ops<T>().aux_loss(p.p(), sel.p(), tokens, experts, k, 0.01);
      On<T> dw(b, d.vec<T>(tokens * k)), dp(b, std::vector<T>(tokens * experts, T(9)));
      b.ops<T>().topk_scatter(dp.p(), sel.p(), dw.p(), tokens, experts, k);
      return std::make_tuple(sel.host(), w.host(), aux, dp.host());
    };
    Data same_seed = d;  // both runs draw the same dweights
    const auto [s1, w1, a1, p1] = topk_of(*cpu_);
    d = same_seed;
    const auto [s2, w2, a2, p2] = topk_of(*other_);
    EXPECT_TRUE(same_vec(s1, s2, "topk"));
    EXPECT_TRUE(same_vec(w1, w2, "topk weights"));
    EXPECT_TRUE(same(a1, a2)) << "aux loss";
    EXPECT_TRUE(same_vec(p1, p2, "topk scatter"));
    // Combine: positions are a permutation of the assignments.
    const std::vector<int64_t> position = {3, 0, 5, 1, 2, 4, 11, 6, 9, 7, 8, 10};
    both<T>({d.vec<T>(tokens * k), d.vec<T>(tokens * k * h), d.vec<T>(tokens * h), d.vec<T>(tokens * h),
             d.vec<T>(tokens * h), d.vec<T>(tokens * k * h), d.vec<T>(tokens * k), d.vec<T>(tokens * h)},
            [&](Backend& b, Bufs<T>& x) {
              auto& ops = b.ops<T>();
              ops.moe_combine(x[3]->p(), x[0]->p(), x[1]->p(), position, x[2]->p(), tokens, k, h);
              ops.moe_combine_backward(x[5]->p(), x[6]->p(), x[4]->p(), x[0]->p(), x[1]->p(), position, tokens, k, h);
              ops.moe_input_grad(x[7]->p(), x[5]->p(), position, x[2]->p(), nullptr, tokens, k, h);
            },
            "moe combine");
  };
  run.template operator()<float>();
  run.template operator()<double>();
}

TEST_P(Equivalence, DataMovement) {
  Data d(8);
  // dtype conversions the model uses, with rounding ties and specials.
  auto f = d.vec<float>(1001, true, 300.0);
  f[0] = 1.0f + 1.0f / 256.0f;  // a bf16 tie
  auto convert = [&](Backend& b, DType to) {
    On<float> src(b, f);
    On<uint64_t> dst(b, std::vector<uint64_t>(f.size()));
    b.convert(dst.p(), to, src.p(), DType::f32, static_cast<int64_t>(f.size()));
    On<float> back(b, std::vector<float>(f.size()));
    b.convert(back.p(), DType::f32, dst.p(), to, static_cast<int64_t>(f.size()));
    return back.host();
  };
  for (DType to : {DType::bf16, DType::f64, DType::f32})
    EXPECT_TRUE(same_vec(convert(*cpu_, to), convert(*other_, to), "convert via " + std::string(dtype_name(to))));
  // To integers, with the inputs C++ leaves undefined and the rule defines (saturate,
  // NaN -> 0; kernels/common/convert.hpp): a GPU must give the host's integers.
  const float inf = std::numeric_limits<float>::infinity();
  for (float special : {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 3e9f, -3e9f, 1e19f, -1e19f, 255.5f,
                        256.0f, -0.75f, -2147483648.0f, 2147483520.0f})
    f.push_back(special);
  for (DType to : {DType::u8, DType::i32, DType::i64})
    EXPECT_TRUE(same_vec(convert(*cpu_, to), convert(*other_, to), "convert via " + std::string(dtype_name(to))));
  // Head permutes both ways, every element size, with a column offset.
  const int64_t s = 3, bsz = 2, a = 2, hd = 5, width = 3 * a * hd, col0 = a * hd;
  for (int esize : {2, 4, 8}) {
    std::vector<uint8_t> tok(static_cast<size_t>(s * bsz * width * esize));
    for (size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<uint8_t>(i * 7 + 3);
    auto permute = [&](Backend& b) {
      On<uint8_t> t(b, tok), h(b, std::vector<uint8_t>(static_cast<size_t>(bsz * a * s * hd * esize)));
      On<uint8_t> back(b, std::vector<uint8_t>(tok.size()));
      b.tokens_to_heads(h.p(), t.p(), esize, width, col0, s, bsz, a, hd);
      b.heads_to_tokens(back.p(), h.p(), esize, width, col0, s, bsz, a, hd);
      return std::make_pair(h.host(), back.host());
    };
    const auto want = permute(*cpu_), got = permute(*other_);
    EXPECT_TRUE(same_vec(want.first, got.first, "tokens_to_heads " + std::to_string(esize)));
    EXPECT_TRUE(same_vec(want.second, got.second, "heads_to_tokens " + std::to_string(esize)));
  }
  // Row gathers (host index).
  const std::vector<int64_t> index = {4, 0, 4, 2};
  const auto rows = d.vec<float>(5 * 3);
  auto gather = [&](Backend& b) {
    On<float> src(b, rows), dst(b, std::vector<float>(index.size() * 3));
    b.gather_rows(dst.p(), src.p(), 3 * sizeof(float), 5, index);
    return dst.host();
  };
  EXPECT_TRUE(same_vec(gather(*cpu_), gather(*other_), "gather_rows"));
}

// The gated delta net's ops (design §15): odd sizes, GQA 2, a conv longer than the
// sequence's first steps, both compute types.
TEST_P(Equivalence, GatedDeltaNet) {
  Data d(21);
  const int64_t B = 2, Hk = 2, Hv = 4, S = 7, Dk = 3, Dv = 5, K = 4;
  auto run = [&]<typename T>() {
    const auto nq = static_cast<size_t>(B * Hk * S * Dk), nv = static_cast<size_t>(B * Hv * S * Dv),
               ng = static_cast<size_t>(B * Hv * S);
    both<T>({d.vec<T>(nq), d.vec<T>(nq), d.vec<T>(static_cast<size_t>(Hk * Dk * K))},
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().causal_conv_silu_forward(x[1]->p(), x[0]->p(), x[2]->p(), B, Hk, S, Dk, K);
            },
            "causal_conv_silu_forward");
    both<T>({d.vec<T>(nq), d.vec<T>(nq), d.vec<T>(static_cast<size_t>(Hk * Dk * K)), d.vec<T>(nq),
             d.vec<T>(static_cast<size_t>(Hk * Dk * K))},
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().causal_conv_silu_backward(x[3]->p(), x[4]->p(), x[0]->p(), x[1]->p(), x[2]->p(), B, Hk, S, Dk,
                                                   K);
            },
            "causal_conv_silu_backward");
    // q k v a b A_log dt_bias | out
    std::vector<std::vector<T>> in = {d.vec<T>(nq), d.vec<T>(nq), d.vec<T>(nv), d.vec<T>(ng, false, 3.0),
                                      d.vec<T>(ng, false, 3.0), d.vec<T>(static_cast<size_t>(Hv)),
                                      d.vec<T>(static_cast<size_t>(Hv))};
    auto fwd = in;
    fwd.push_back(std::vector<T>(nv));
    both<T>(fwd,
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().gated_delta_rule_forward(x[7]->p(), x[0]->p(), x[1]->p(), x[2]->p(), x[3]->p(), x[4]->p(),
                                                  x[5]->p(), x[6]->p(), B, Hk, Hv, S, Dk, Dv);
            },
            "gated_delta_rule_forward");
    auto bwd = in;  // + dout, then dq dk dv da db dA_log ddt_bias
    bwd.push_back(d.vec<T>(nv));
    for (size_t n : {nq, nq, nv, ng, ng}) bwd.push_back(std::vector<T>(n));
    bwd.push_back(d.vec<T>(static_cast<size_t>(Hv)));
    bwd.push_back(d.vec<T>(static_cast<size_t>(Hv)));
    both<T>(bwd,
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().gated_delta_rule_backward(x[8]->p(), x[9]->p(), x[10]->p(), x[11]->p(), x[12]->p(),
                                                   x[13]->p(), x[14]->p(), x[7]->p(), x[0]->p(), x[1]->p(), x[2]->p(),
                                                   x[3]->p(), x[4]->p(), x[5]->p(), x[6]->p(), B, Hk, Hv, S, Dk, Dv);
            },
            "gated_delta_rule_backward");
    const int64_t N = 9, D = 5;
    const auto nn = static_cast<size_t>(N * D);
    both<T>({d.vec<T>(nn, true), d.vec<T>(nn), d.vec<T>(static_cast<size_t>(D)), d.vec<T>(nn)},
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().gated_rmsnorm_forward(x[3]->p(), x[0]->p(), x[1]->p(), x[2]->p(), N, D, 1e-5);
            },
            "gated_rmsnorm_forward");
    both<T>({d.vec<T>(nn), d.vec<T>(nn), d.vec<T>(static_cast<size_t>(D)), d.vec<T>(nn), d.vec<T>(nn), d.vec<T>(nn),
             d.vec<T>(static_cast<size_t>(D))},
            [&](Backend& b, Bufs<T>& x) {
              b.ops<T>().gated_rmsnorm_backward(x[4]->p(), x[5]->p(), x[6]->p(), x[3]->p(), x[0]->p(), x[1]->p(),
                                                x[2]->p(), N, D, 1e-5);
            },
            "gated_rmsnorm_backward");
  };
  run.template operator()<float>();
  run.template operator()<double>();
}

// Every registered backend that reproduces the CPU's goldens, except the reference.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  for (const auto& e : registered_backends())
    if (e.golden_name == "cpu" && e.name != "cpu") out.push_back(e.name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, Equivalence, ::testing::ValuesIn(candidates()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace rcts
