// The fused-attention path (model.flash_attention, design §11) on the host: a test
// double stands in for cuDNN (its own dropout rule, drawn from the (seed, offset) it is
// handed, and a real attention in float), so the cases in cases/fused/ run through the
// runner here with what cuda-cudnn runs on a GPU: the CoreAttention fused path, the
// tracker's reservation, the stash for backward, the mask log without bits, the
// portable masks check, the fused-attention memory model and the golden skip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/run/runner.hpp"
#include "kernels/common/bf16.hpp"
#include "reference/backend/fused_attention.hpp"

namespace rcts::harness {
namespace {

const std::filesystem::path kSource = RCTS_SOURCE_DIR;

uint64_t mix(uint64_t x) {  // splitmix64: a rule unlike rcts's Philox one
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A fused attention on host memory. `ignore_offset`: draws from a call counter instead
// of the offset it is handed, as a library would that does not redraw from (seed, offset).
class HostAttention final : public FusedAttention {
 public:
  bool ignore_offset = false;
  int forwards = 0, backwards = 0;

  std::string refusal(DType dtype, const FusedAttentionShape& sh, double p) const override {
    if (dtype != DType::bf16) return "test attention takes bf16, not " + std::string(dtype_name(dtype));
    if (sh.d != sh.dv) return "test attention takes one head dim";
    return p < 1 ? "" : "p >= 1";
  }
  void forward(void* out, float* stats, const void* q, const void* k, const void* v, DType, const FusedAttentionShape& sh,
               double scale, double p, uint64_t seed, uint64_t offset) override {
    const uint64_t draw = ignore_offset ? 1000 + static_cast<uint64_t>(forwards) : offset;
    ++forwards;
    const int64_t s = sh.s, d = sh.d;
    for (int64_t h = 0; h < sh.b * sh.a; ++h)
      for (int64_t i = 0; i < s; ++i) {
        std::vector<double> x(static_cast<size_t>(i + 1));
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= i; ++j) m = std::max(m, x[j] = score(q, k, h, i, j, s, d) * scale);
        for (int64_t j = 0; j <= i; ++j) sum += std::exp(x[j] - m);
        const double lse = m + std::log(sum);
        stats[h * s + i] = static_cast<float>(lse);
        for (int64_t c = 0; c < d; ++c) {
          double o = 0;
          for (int64_t j = 0; j <= i; ++j) o += dropped(std::exp(x[j] - lse), seed, draw, h, i, j, s, p) * at(v, (h * s + j) * d + c);
          put(out, token(sh, h, i, c), o);
        }
      }
  }
  void backward(void* dq, void* dk, void* dv, const void* dout, const void* q, const void* k, const void* v,
                const void* out, const float* stats, DType, const FusedAttentionShape& sh, double scale, double p,
                uint64_t seed, uint64_t offset) override {
    const uint64_t draw = ignore_offset ? 1000 + static_cast<uint64_t>(backwards) : offset;
    ++backwards;
    const int64_t s = sh.s, d = sh.d, n = sh.b * sh.a * s * d;
    std::vector<double> gq(static_cast<size_t>(n)), gk(static_cast<size_t>(n)), gv(static_cast<size_t>(n));
    for (int64_t h = 0; h < sh.b * sh.a; ++h)
      for (int64_t i = 0; i < s; ++i) {
        double D = 0;
        for (int64_t c = 0; c < d; ++c) D += at(dout, token(sh, h, i, c)) * at(out, token(sh, h, i, c));
        for (int64_t j = 0; j <= i; ++j) {
          const double P = std::exp(score(q, k, h, i, j, s, d) * scale - stats[h * s + i]);
          const double Pd = dropped(P, seed, draw, h, i, j, s, p);
          double dPd = 0;
          for (int64_t c = 0; c < d; ++c) {
            dPd += at(dout, token(sh, h, i, c)) * at(v, (h * s + j) * d + c);
            gv[(h * s + j) * d + c] += Pd * at(dout, token(sh, h, i, c));
          }
          const double dS = (P > 0 ? Pd / P : 0) * dPd * P - P * D;  // P (dP - D), dP = keep/(1-p) dPd
          for (int64_t c = 0; c < d; ++c) {
            gq[(h * s + i) * d + c] += dS * scale * at(k, (h * s + j) * d + c);
            gk[(h * s + j) * d + c] += dS * scale * at(q, (h * s + i) * d + c);
          }
        }
      }
    for (int64_t e = 0; e < n; ++e) put(dq, e, gq[e]), put(dk, e, gk[e]), put(dv, e, gv[e]);
  }

 private:
  // Element (head h = b·a + a, row i, column c) of a token-layout (s, b, a·dv) tensor.
  static int64_t token(const FusedAttentionShape& sh, int64_t h, int64_t i, int64_t c) {
    return (i * sh.b + h / sh.a) * sh.a * sh.dv + (h % sh.a) * sh.dv + c;
  }
  static double at(const void* p, int64_t i) {
    bf16 h;
    std::memcpy(&h, static_cast<const std::byte*>(p) + 2 * i, 2);
    return from_bf16(h);
  }
  static void put(void* p, int64_t i, double x) {
    const bf16 h = to_bf16(static_cast<float>(x));
    std::memcpy(static_cast<std::byte*>(p) + 2 * i, &h, 2);
  }
  static double score(const void* q, const void* k, int64_t h, int64_t i, int64_t j, int64_t s, int64_t d) {
    double x = 0;
    for (int64_t c = 0; c < d; ++c) x += at(q, (h * s + i) * d + c) * at(k, (h * s + j) * d + c);
    return x;
  }
  static double dropped(double P, uint64_t seed, uint64_t offset, int64_t h, int64_t i, int64_t j, int64_t s, double p) {
    if (p <= 0) return P;
    const uint64_t r = mix(seed ^ mix(offset ^ mix(static_cast<uint64_t>((h * s + i) * s + j))));
    return static_cast<double>(r >> 40) / 16777216.0 >= p ? P / (1 - p) : 0.0;
  }
};

// The CPU backend with the host attention as its fused attention.
class FusedCpu final : public Backend {
 public:
  HostAttention attention;
  std::string name() const override { return "cpu-fused-test"; }
  std::string description() const override { return "kernels/cpu with a host fused attention (test double)"; }
  bool has_goldens() const override { return false; }
  FusedAttention* fused_attention() override { return &attention; }
  Ops<float>& f32() override { return cpu_->f32(); }
  Ops<double>& f64() override { return cpu_->f64(); }
  MemoryResource& memory() override { return cpu_->memory(); }
  void convert(void* dst, DType dt, const void* src, DType st, int64_t n) override { cpu_->convert(dst, dt, src, st, n); }
  void tokens_to_heads(void* heads, const void* tok, int eb, int64_t w, int64_t c0, int64_t s, int64_t b, int64_t a,
                       int64_t d) override {
    cpu_->tokens_to_heads(heads, tok, eb, w, c0, s, b, a, d);
  }
  void heads_to_tokens(void* tok, const void* heads, int eb, int64_t w, int64_t c0, int64_t s, int64_t b, int64_t a,
                       int64_t d) override {
    cpu_->heads_to_tokens(tok, heads, eb, w, c0, s, b, a, d);
  }
  void gather_rows(void* dst, const void* src, int64_t rb, int64_t rows, std::span<const int64_t> index) override {
    cpu_->gather_rows(dst, src, rb, rows, index);
  }
  void dropout_mask(uint8_t* mask, int64_t n, double p, uint64_t seed, uint64_t offset) override {
    cpu_->dropout_mask(mask, n, p, seed, offset);
  }
  std::unique_ptr<CopyStream> make_copy_stream(const std::string& name, LinkModel link) override {
    return cpu_->make_copy_stream(name, link);
  }

 private:
  std::unique_ptr<Backend> cpu_ = cpu::make_cpu_backend();
};

Case fused_case(const char* file, const std::string& backend) {
  Case c = load_case(kSource / "cases" / "fused" / file);
  c.backends = {backend};
  return c;
}

CaseResult run_on(Backend& b, const Case& c) {
  RunOptions o;
  o.scope.backend = &b;
  o.scope.golden_dir = kSource / "golden";
  return run_case(c, o);
}

const CheckResult* find(const CaseResult& r, const std::string& kind, Outcome outcome) {
  for (const auto& ch : r.checks)
    if (ch.kind == kind && ch.outcome == outcome) return &ch;
  return nullptr;
}

std::string explain(const CaseResult& r) {
  std::string s = r.reason;
  for (const auto& ch : r.checks) s += "\n  " + ch.kind + " " + std::string(outcome_name(ch.outcome)) + ": " + ch.detail;
  return s;
}

TEST(FusedAttention, RecomputeVariantsHoldTheChecksOfTheTier) {
  FusedCpu b;
  const CaseResult r = run_on(b, fused_case("recompute.bf16.json", b.name()));
  ASSERT_EQ(r.outcome, Outcome::pass) << explain(r);
  EXPECT_GT(b.attention.forwards, 0);
  EXPECT_GT(b.attention.backwards, 0);
  // Masks: judged by (seed, offset), not regenerated; memory: the fused model, peak included.
  const CheckResult* masks = find(r, "masks", Outcome::pass);
  ASSERT_NE(masks, nullptr) << explain(r);
  EXPECT_NE(masks->detail.find("fused attention"), std::string::npos) << masks->detail;
  const CheckResult* memory = find(r, "memory", Outcome::pass);
  ASSERT_NE(memory, nullptr) << explain(r);
  EXPECT_NE(memory->detail.find("backward peak"), std::string::npos) << memory->detail;
  // Golden: this tier keeps none, so the check skips and says why.
  const CheckResult* golden = find(r, "golden", Outcome::skip);
  ASSERT_NE(golden, nullptr) << explain(r);
  EXPECT_NE(golden->detail.find("keeps no golden files"), std::string::npos) << golden->detail;
}

TEST(FusedAttention, OffloadOfTheFusedSavesHoldsTheChecks) {
  FusedCpu b;
  const CaseResult r = run_on(b, fused_case("offload.bf16.json", b.name()));
  EXPECT_EQ(r.outcome, Outcome::pass) << explain(r);
}

TEST(FusedAttention, OffloadOfTheCoreAttnGroupIsNotImplementedAndSkips) {
  FusedCpu b;
  Case c = fused_case("offload.bf16.json", b.name());
  c.variants.at(0).patch["offload"]["offload_modules"] = {"core_attn"};
  const CaseResult r = run_on(b, c);
  EXPECT_EQ(r.outcome, Outcome::skip) << explain(r);
  EXPECT_NE(r.reason.find("offload_modules core_attn with model.flash_attention"), std::string::npos) << r.reason;
}

TEST(FusedAttention, ALibraryThatDoesNotRedrawFromTheOffsetFails) {
  FusedCpu b;
  b.attention.ignore_offset = true;
  const CaseResult r = run_on(b, fused_case("recompute.bf16.json", b.name()));
  EXPECT_EQ(r.outcome, Outcome::fail) << explain(r);
  EXPECT_NE(find(r, "bitwise", Outcome::fail), nullptr) << explain(r);
}

TEST(FusedAttention, ABackendWithoutFusedAttentionSkipsWithTheReason) {
  std::unique_ptr<Backend> cpu = cpu::make_cpu_backend();
  const CaseResult r = run_on(*cpu, fused_case("recompute.bf16.json", "cpu"));
  EXPECT_EQ(r.outcome, Outcome::skip) << explain(r);
  EXPECT_NE(r.reason.find("model.flash_attention"), std::string::npos) << r.reason;
}

TEST(FusedAttention, TheFusedPathRefusesWhatTheLibraryRefuses) {
  FusedCpu b;
  Case c = fused_case("recompute.bf16.json", b.name());
  c.config["model"]["activation_dtype"] = "f32";
  const CaseResult r = run_on(b, c);
  EXPECT_EQ(r.outcome, Outcome::error) << explain(r);
  EXPECT_NE(r.reason.find("test attention takes bf16, not f32"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace rcts::harness
