// Modules and the whole block against central finite differences in f64. Dropout
// masks are held fixed by reseeding the RNG identically before every forward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/model.hpp"
#include "reference/modules/attention.hpp"
#include "reference/modules/gdn.hpp"
#include "reference/modules/mla_attention.hpp"
#include "reference/rng/seeds.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

Config small_config() {
  Config c = test_support::dense({.hidden = 8, .seq = 4, .ffn = 12});
  c.model.attention_dropout = 0.1;
  c.model.hidden_dropout = 0.1;
  c.model.activation_dtype = DType::f64;
  c.run.seed = 99;
  return c;
}

Tensor random_f64(Runtime& rt, const Shape& shape, const std::string& key) {
  Tensor t = Tensor::empty(shape, DType::f64, rt.place(), key);
  fill_uniform(t, 4242, key, 1.0);
  return t;
}

// Loss = sum_i y_i * w_i over every output, with fixed random weights w.
struct GradCheck {
  Runtime& rt;
  Region& region;
  std::vector<Tensor> inputs;
  std::vector<Parameter*> params;
  std::vector<Tensor> weights;

  double loss() {
    seed_runtime(rt);
    SaveContext ctx("", nullptr, false);
    auto out = region.forward(ctx, inputs);
    double l = 0;
    for (size_t o = 0; o < out.size(); ++o)
      for (int64_t i = 0; i < out[o].numel(); ++i) l += out[o].data<double>()[i] * weights[o].data<double>()[i];
    return l;
  }

  void run(double tol = 1e-6) {
    // Analytic gradients.
    seed_runtime(rt);
    zero_grads(params);
    SaveContext ctx("", nullptr, true);
    auto out = region.forward(ctx, inputs);
    if (weights.empty())
      for (size_t o = 0; o < out.size(); ++o) weights.push_back(random_f64(rt, out[o].shape(), "w" + std::to_string(o)));
    auto din = region.backward(ctx, weights);
    ASSERT_EQ(din.size(), inputs.size());
    const double eps = 1e-6;
    auto fd = [&](double* x) {
      const double keep = *x;
      *x = keep + eps;
      const double lp = loss();
      *x = keep - eps;
      const double lm = loss();
      *x = keep;
      return (lp - lm) / (2 * eps);
    };
    int checked = 0;
    auto compare = [&](const std::string& what, double analytic, double numeric) {
      ++checked;
      EXPECT_NEAR(analytic, numeric, tol * std::max(1.0, std::fabs(numeric))) << what;
    };
    for (size_t k = 0; k < inputs.size(); ++k) {
      const int64_t n = inputs[k].numel();
      for (int64_t i : {int64_t{0}, n / 3, n - 1})
        compare("input " + std::to_string(k) + "[" + std::to_string(i) + "]", din[k].data<double>()[i],
                fd(inputs[k].data<double>() + i));
    }
    for (auto* p : params) {
      const int64_t n = p->value.numel();
      for (int64_t i : {int64_t{0}, n / 2, n - 1})
        compare(p->name + "[" + std::to_string(i) + "]", p->grad.data<double>()[i], fd(p->value.data<double>() + i));
    }
    EXPECT_GT(checked, 0);
  }
};

struct ModuleGradcheck : ::testing::Test {
  Config cfg = small_config();
  std::unique_ptr<Runtime> rt;
  void SetUp() override { rt = std::make_unique<Runtime>(cfg, cpu::default_backend()); }
  int64_t tokens() const { return int64_t{cfg.model.seq_length} * cfg.model.micro_batch_size; }
};

TEST_F(ModuleGradcheck, LayerNorm) {
  LayerNorm m(*rt, "ln", 8);
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{*rt, m, {random_f64(*rt, {tokens(), 8}, "x")}, p, {}}.run();
}

TEST_F(ModuleGradcheck, Linear) {
  Linear m(*rt, "fc", {8, 5});
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{*rt, m, {random_f64(*rt, {tokens(), 8}, "x")}, p, {}}.run();
}

TEST_F(ModuleGradcheck, CoreAttentionWithDropout) {
  CoreAttention m(*rt, "attn");
  const Shape heads{2, 2, 4, 4};
  GradCheck{*rt, m, {random_f64(*rt, heads, "q"), random_f64(*rt, heads, "k"), random_f64(*rt, heads, "v")}, {}, {}}
      .run();
}

TEST_F(ModuleGradcheck, SelfAttention) {
  SelfAttention m(*rt, "attn", false);
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{*rt, m, {random_f64(*rt, {tokens(), 8}, "x")}, p, {}}.run();
}

TEST_F(ModuleGradcheck, MlpGelu) {
  Mlp m(*rt, "mlp");
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{*rt, m, {random_f64(*rt, {tokens(), 8}, "x")}, p, {}}.run();
}

TEST(ModuleGradcheckSwiglu, MlpSwiglu) {
  Config c = small_config();
  c.model.activation = "swiglu";
  Runtime rt(c, cpu::default_backend());
  Mlp m(rt, "mlp");
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{rt, m, {random_f64(rt, {8, 8}, "x")}, p, {}}.run();
}

TEST_F(ModuleGradcheck, TransformerLayer) {
  TransformerLayer m(*rt, 0);
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{*rt, m, {random_f64(*rt, {tokens(), 8}, "x")}, p, {}}.run();
}

TEST_F(ModuleGradcheck, WholeBlockTwoLayersWithDropout) {
  TransformerBlock m(*rt);
  std::vector<Parameter*> p;
  m.parameters(p);
  ASSERT_EQ(p.size(), 2u * 12u) << "2 layers x (2 norms x 2 + 4 linears x 2)";
  GradCheck{*rt, m, {random_f64(*rt, {tokens(), 8}, "x")}, p, {}}.run();
}


// MLA (design §14) with and without query compression; odd sizes so every split,
// head concatenation and RoPE pair is exercised off any power of two.
Config mla_config(int q_lora_rank) {
  Config c = small_config();
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = q_lora_rank;
  c.model.kv_lora_rank = 5;
  c.model.qk_head_dim = 3;
  c.model.qk_pos_emb_head_dim = 4;
  c.model.v_head_dim = 2;
  return c;
}

TEST(ModuleGradcheckMla, WithQueryCompression) {
  Runtime rt(mla_config(6), cpu::default_backend());
  MlaAttention m(rt, "mla", false, false);
  std::vector<Parameter*> p;
  m.parameters(p);
  ASSERT_EQ(p.size(), 10u) << "q_down, q_norm x2, kv_down, kv_norm x2, q_up, kv_up, proj x2";
  GradCheck{rt, m, {random_f64(rt, {8, 8}, "x")}, p, {}}.run();
}

TEST(ModuleGradcheckMla, WithoutQueryCompressionInALayer) {
  Runtime rt(mla_config(0), cpu::default_backend());
  TransformerLayer m(rt, 0);
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{rt, m, {random_f64(rt, {8, 8}, "x")}, p, {}}.run();
}

// Gated delta net (design §15): f64, 2 key heads shared by 4 value heads (GQA 2),
// dk != dv, a conv kernel longer than one step.
Config gdn_config() {
  Config c = small_config();
  c.model.seq_length = 5;
  c.model.gated_delta_net = true;
  c.model.linear_attention_pattern = {1, 0};
  c.model.linear_conv_kernel_dim = 3;
  c.model.linear_key_head_dim = 3;
  c.model.linear_value_head_dim = 2;
  c.model.linear_num_key_heads = 2;
  c.model.linear_num_value_heads = 4;
  return c;
}

TEST(ModuleGradcheckGdn, GatedDeltaNet) {
  Config c = gdn_config();
  Runtime rt(c, cpu::default_backend());
  GatedDeltaNet m(rt, "gdn", false, 0);
  std::vector<Parameter*> p;
  m.parameters(p);
  ASSERT_EQ(p.size(), 8u) << "in_proj, conv q/k/v, A_log, dt_bias, out_norm, out_proj";
  GradCheck{rt, m, {random_f64(rt, {10, 8}, "x")}, p, {}}.run();
}

TEST(ModuleGradcheckGdn, GatedDeltaNetNormOutRecompute) {
  Config c = gdn_config();
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"gdn_norm_out"};
  Runtime rt(c, cpu::default_backend());
  GatedDeltaNet m(rt, "gdn", true, 0);
  std::vector<Parameter*> p;
  m.parameters(p);
  GradCheck{rt, m, {random_f64(rt, {10, 8}, "x")}, p, {}}.run();
}

TEST(ModuleGradcheckGdn, HybridLayersGdnThenAttention) {
  Config c = gdn_config();
  Runtime rt(c, cpu::default_backend());
  TransformerBlock m(rt);
  std::vector<Parameter*> p;
  m.parameters(p);
  ASSERT_EQ(p.size(), 4u + 8u + 4u + 12u) << "layer 0: norms + GDN + MLP; layer 1: dense";
  GradCheck{rt, m, {random_f64(rt, {10, 8}, "x")}, p, {}}.run();
}

}  // namespace
}  // namespace rcts
