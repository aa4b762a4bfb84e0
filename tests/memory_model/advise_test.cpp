// The recompute advisor against figures derived by hand from Korthikanti et al.'s
// per-layer terms and the backward-peak rule of activation_memory.hpp, for a config
// small enough to add up on paper:
//   s = 8, b = 2, h = 16, a = 2, ffn = 64, bf16 (d = 2), GeLU, dropout on, L = 2, t = 1
//   sbh = 256;  A = 34·d/2·sbh + 5·as²b = 8704 + 1280 = 9984 bytes per layer
//   s² terms 5·as²b = 1280; act + fc2 inputs 2·d·sb·ffn = 4096; one LN output d·sbh = 512
//   chunk input c = d·sbh = 512
//   F = 24·bsh² + 4·bs²h = 98304 + 8192 = 106496 FLOPs per layer;
//   core attention 4·bs²h = 8192; MLP 4·sbh·ffn = 65536
#include <gtest/gtest.h>

#include "reference/config/config_error.hpp"
#include "reference/memory_model/advise.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

Config small() {
  Config c = test_support::tiny_dense(2, 4);
  c.model.activation_dtype = DType::bf16;
  return c;
}

const AdviceCandidate& find(const Advice& a, const std::string& name) {
  for (const auto& c : a.candidates)
    if (c.name == name) return c;
  ADD_FAILURE() << "no candidate " << name;
  static AdviceCandidate none;
  return none;
}

constexpr int64_t A = 9984, S2 = 1280, MLPI = 4096, LN = 512, C = 512;
constexpr int64_t F = 106496, CORE = 8192, MLP = 65536;

TEST(Advise, FiguresEqualTheHandDerivedOnes) {
  const Advice a = advise(small(), 16000, "test");
  // peak = stored prefix of layer 0 + layer 1's worst moment (A for these settings).
  struct Want {
    const char* name;
    int64_t stored, peak, flops;
  };
  const Want want[] = {
      {"selective []", 2 * A, 2 * A, 0},
      {"selective [core_attn]", 2 * (A - S2), (A - S2) + A, 2 * CORE},
      {"selective [mlp]", 2 * (A - MLPI), (A - MLPI) + A, 2 * MLP},
      {"selective [layernorm]", 2 * (A - 2 * LN), (A - 2 * LN) + A, 0},
      {"selective [core_attn,layernorm]", 2 * (A - S2 - 2 * LN), (A - S2 - 2 * LN) + A, 2 * CORE},
      // core_attn + mlp: worst = max(A - s², A - act - fc2 - LN2 out) = A - s².
      {"selective [core_attn,mlp]", 2 * (A - S2 - MLPI), (A - S2 - MLPI) + (A - S2), 2 * (CORE + MLP)},
      // mlp + layernorm: worst = max(A - LN1 out, A - act - fc2) = A - LN.
      {"selective [mlp,layernorm]", 2 * (A - MLPI - 2 * LN), (A - MLPI - 2 * LN) + (A - LN), 2 * MLP},
      {"full uniform 1", 2 * C, C + A, 2 * F},
      {"full uniform 2", C, 2 * A, 2 * F},
      {"full block 1", C + A, C + A, F},
      {"full block 2", 2 * C, C + A, 2 * F},
  };
  for (const Want& w : want) {
    const AdviceCandidate& c = find(a, w.name);
    EXPECT_TRUE(c.valid) << w.name;
    EXPECT_EQ(c.stored_bytes, w.stored) << w.name;
    EXPECT_EQ(c.peak_bytes, w.peak) << w.name;  // one micro-batch in flight (pp = 1)
    EXPECT_EQ(c.recompute_flops, w.flops) << w.name;
    EXPECT_EQ(c.fits, w.peak <= 16000) << w.name;
  }
  EXPECT_EQ(a.candidates.size(), 8u + 2 * 2);
  // Cheapest that fits: block 1 (106496 FLOPs, 10496 bytes); everything cheaper peaks above 16000.
  ASSERT_TRUE(a.recommended);
  EXPECT_EQ(a.candidates[*a.recommended].name, "full block 1");
  EXPECT_EQ(a.candidates.front().name, "selective []");  // 0 FLOPs, narrowest
}

TEST(Advise, TheNarrowestSettingWinsATie) {
  // Both zero-FLOP settings fit: the control (nothing recomputed) is cheaper than layernorm.
  EXPECT_EQ(advise(small(), 2 * A, "t").candidates[*advise(small(), 2 * A, "t").recommended].name, "selective []");
  const Advice a = advise(small(), 2 * A - 1, "t");
  EXPECT_EQ(a.candidates[*a.recommended].name, "selective [layernorm]");
}

TEST(Advise, InFlightMicroBatchesAddTheirStoredBytes) {
  Config c = small();
  c.model.num_layers = 4;                       // the whole model: 2 layers per stage (design §16)
  c.parallel.pipeline_model_parallel_size = 2;  // P = min(2, 4) = 2 on stage 0
  const Advice a = advise(c, 1'000'000, "t");
  EXPECT_EQ(a.in_flight, 2);
  EXPECT_EQ(find(a, "selective []").peak_bytes, 2 * A + 2 * A);
  EXPECT_EQ(find(a, "full block 1").peak_bytes, (C + A) + (C + A));
}

TEST(Advise, TensorParallelFlopsArePerRank) {
  Config c = small();
  c.parallel.tensor_model_parallel_size = 2;
  EXPECT_EQ(find(advise(c, 1'000'000, "t"), "full block 1").recompute_flops, F / 2);
}

TEST(Advise, AnInfeasibleBudgetRecommendsNothing) {
  const Advice a = advise(small(), C + A - 1, "t");  // the smallest peak is C + A
  EXPECT_FALSE(a.recommended);
  for (const auto& c : a.candidates) EXPECT_FALSE(c.fits) << c.name;
  EXPECT_NE(advice_text(a).find("nothing fits: the smallest peak is 10496 bytes"), std::string::npos) << advice_text(a);
  EXPECT_TRUE(advice_json(a)["recommended"].is_null());
}

TEST(Advise, CandidatesTheRulesRejectAreListedAsInvalid) {
  Config c = small();
  c.model.cuda_graph_impl = "transformer_engine";
  c.model.cuda_graph_scope = {"attn"};
  const Advice a = advise(c, 1'000'000, "t");
  EXPECT_FALSE(find(a, "full uniform 1").valid);
  EXPECT_EQ(find(a, "full uniform 1").invalid_code, "cuda_graph.full_recompute_needs_full_iteration");
  EXPECT_TRUE(find(a, "selective [core_attn]").valid);
  c = small();
  c.model.fp8 = "e4m3";
  const Advice f = advise(c, 1'000'000, "t");
  EXPECT_EQ(find(f, "selective [layernorm]").invalid_code, "recompute.fp8_delayed_vs_output_discarding");
  EXPECT_TRUE(find(f, "selective [mlp]").valid);
}

// MLA and GDN (design §14, §15): their boundaries are candidates, priced by hand here.
// s = 8, b = 2 (sb = 16), h = 16, a = 2.
TEST(Advise, MlaUpProjIsACandidatePricedByItsUpProjections) {
  Config c = small();
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = 6;
  c.model.kv_lora_rank = 5;
  c.model.qk_head_dim = 3;
  c.model.qk_pos_emb_head_dim = 4;  // dq = 7
  c.model.v_head_dim = 2;
  const Advice a = advise(c, int64_t{1} << 40, "t");
  EXPECT_EQ(a.candidates.size(), 16u + 2 * 2);
  // q up 2·16·6·2·7 = 2688, kv up 2·16·5·2·(3 + 2) = 1600, per layer, 2 layers.
  EXPECT_EQ(find(a, "selective [mla_up_proj]").recompute_flops, 2 * (2688 + 1600));
  // scores 2·2·8·8·2·7 = 3584, context 2·2·8·8·2·2 = 1024.
  EXPECT_EQ(find(a, "selective [core_attn]").recompute_flops, 2 * (3584 + 1024));
  // Under TP 2 the replicated down-projections (q 2·16·16·6 = 3072, kv 2·16·16·(5 + 4)
  // = 4608) stay whole in a full recompute; everything else halves.
  c.parallel.tensor_model_parallel_size = 2;
  const int64_t layer = 2688 + 1600 + 3072 + 4608 + 3584 + 1024 + 2 * 16 * 2 * 2 * 16 + MLP;
  EXPECT_EQ(find(advise(c, int64_t{1} << 40, "t"), "full uniform 1").recompute_flops,
            2 * ((layer - 3072 - 4608) / 2 + 3072 + 4608));
}

TEST(Advise, GdnNormOutIsACandidateThatRecomputesNoMatmul) {
  Config c = small();
  c.model.gated_delta_net = true;
  c.model.linear_attention_pattern = {1, 0};  // layer 0 GDN, layer 1 attention
  c.model.linear_conv_kernel_dim = 3;
  c.model.linear_key_head_dim = 4;
  c.model.linear_value_head_dim = 4;
  c.model.linear_num_key_heads = 2;
  c.model.linear_num_value_heads = 4;
  const Advice a = advise(c, int64_t{1} << 40, "t");
  EXPECT_EQ(find(a, "selective [gdn_norm_out]").recompute_flops, 0);
  EXPECT_EQ(find(a, "selective [core_attn]").recompute_flops, CORE) << "the attention layer only";
  // GDN layer: in_proj 2·16·16·(2·(8 + 16) + 2·4) = 28672, recurrence 6·16·4·4·4 = 6144,
  // out_proj 2·16·16·16 = 8192, its MLP; the attention layer F (one dense layer).
  EXPECT_EQ(find(a, "full uniform 2").recompute_flops, 28672 + 6144 + 8192 + MLP + F);
  EXPECT_EQ(find(a, "full block 1").recompute_flops, 28672 + 6144 + 8192 + MLP);
}

TEST(Advise, RefusesWhatTheModelDoesNotCoverNamingFieldAndValue) {
  Config c = small();
  c.model.num_moe_experts = 4;
  try {
    advise(c, 1000, "moe.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "/model/num_moe_experts");
    EXPECT_NE(std::string(e.what()).find("moe.json: model.num_moe_experts = 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(advise(small(), 0, "t"), Error);
  Config hybrid = small();
  hybrid.model.multi_latent_attention = true;
  hybrid.model.gated_delta_net = true;
  hybrid.model.linear_attention_freq = 2;
  try {
    advise(hybrid, 1000, "hybrid.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "/model/gated_delta_net");
    EXPECT_NE(std::string(e.what()).find("MLA with GDN layers"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rcts
