// The MLA terms of the activation memory model (mla_memory.hpp, design §14) by
// hand-derived bytes. Dims: bf16 (d = 2), s = 8, b = 2 (sb = 16), h = 32, a = 2,
// q_lora_rank 12, kv_lora_rank 10, qk_head_dim 6, qk_pos_emb_head_dim 4 (dq = 10),
// v_head_dim 5, ffn = 128, GeLU, dropout on. Per tensor:
//   LN1 output (kv_down input)   2*16*32  = 1024
//   q_layernorm / q_up input     2*16*12  =  384 each
//   kv_layernorm / kv_up input   2*16*10  =  320 each
//   q, k                          2*16*2*10 = 640 each; v 2*16*2*5 = 320
//   softmax out, dropout out      2*2*8*8*2 = 512 each; dropout mask 256
//   proj input                    2*16*2*5  = 320;  k_pos_emb 2*16*4 = 128
// Attention part, no recompute: 1024 + 768 + 640 + 1600 + 1280 + 320 = 5632.
// Rest of the layer: LN1 input 1024, hidden masks 512 + 512, LN2 input 1024, fc1 input
// 1024, act and fc2 inputs 2*16*128 = 4096 each: 12288. Layer: 17920.
#include <gtest/gtest.h>

#include "reference/memory_model/activation_memory.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

Config mla_config(int q_lora_rank = 12) {
  Config c = test_support::dense({.layers = 1, .hidden = 32, .ffn = 128});
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = q_lora_rank;
  c.model.kv_lora_rank = 10;
  c.model.qk_head_dim = 6;
  c.model.qk_pos_emb_head_dim = 4;
  c.model.v_head_dim = 5;
  return c;
}

void selective(Config& c, std::vector<std::string> modules) {
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = std::move(modules);
}

int64_t attention_part(const LayerMemory& l) {
  return l.prefix_bytes("attention.") - l.bytes("attention.hidden_dropout.mask");
}

TEST(MlaMemory, TensorsWithoutRecompute) {
  const LayerMemory l = layer_memory(MemoryDims::from(mla_config()));
  EXPECT_EQ(l.bytes("attention.linear_kv_down_proj.input"), 1024);
  EXPECT_EQ(l.bytes("attention.q_layernorm.input"), 384);
  EXPECT_EQ(l.bytes("attention.linear_q_up_proj.input"), 384);
  EXPECT_EQ(l.bytes("attention.kv_layernorm.input"), 320);
  EXPECT_EQ(l.bytes("attention.linear_kv_up_proj.input"), 320);
  EXPECT_EQ(l.bytes("attention.q"), 640);
  EXPECT_EQ(l.bytes("attention.k"), 640);
  EXPECT_EQ(l.bytes("attention.v"), 320);
  EXPECT_EQ(l.bytes("attention.k_pos_emb"), 0) << "RoPE's backward needs only the table";
  EXPECT_EQ(l.bytes("attention.proj.input"), 320);
  EXPECT_EQ(l.bytes("attention.qkv.input"), 0) << "no dense QKV";
  EXPECT_EQ(attention_part(l), 5632);
  EXPECT_EQ(l.total(), 17920);
}

TEST(MlaMemory, UpProjDropsQkvAndKeepsKPosEmb) {
  const LayerMemory l = layer_memory(MemoryDims::from(mla_config()), {"mla_up_proj"});
  EXPECT_EQ(l.bytes("attention.q") + l.bytes("attention.k") + l.bytes("attention.v"), 0);
  EXPECT_EQ(l.bytes("attention.k_pos_emb"), 128);
  EXPECT_EQ(attention_part(l), 5632 - 1600 + 128);
  // core_attn as well: the s² tensors go too.
  const LayerMemory both = layer_memory(MemoryDims::from(mla_config()), {"core_attn", "mla_up_proj"});
  EXPECT_EQ(attention_part(both), 5632 - 1600 + 128 - 1280);
}

TEST(MlaMemory, WithoutQueryCompressionAndUnderTensorParallelism) {
  const LayerMemory l = layer_memory(MemoryDims::from(mla_config(0)));
  EXPECT_EQ(l.bytes("attention.q_layernorm.input"), 0);
  EXPECT_EQ(attention_part(l), 5632 - 768);
  Config c = mla_config();
  c.parallel.tensor_model_parallel_size = 2;  // heads split: q, k, v, s², proj input halve
  EXPECT_EQ(attention_part(layer_memory(MemoryDims::from(c))), 1024 + 768 + 640 + 800 + 640 + 160);
}

TEST(MlaMemory, BackwardPeakHoldsTheRecomputedQkv) {
  Config c = mla_config();
  EXPECT_EQ(stage_memory(c).peak_backward_bytes, 17920);
  selective(c, {"mla_up_proj"});
  const StageMemory st = stage_memory(c);
  EXPECT_EQ(st.stored_bytes, 17920 - 1600 + 128);
  EXPECT_EQ(st.peak_backward_bytes, 17920 + 128) << "q, k, v are back before core attention's backward";
  selective(c, {"mla_up_proj", "layernorm"});  // + LN1 output and LN2 output back
  EXPECT_EQ(stage_memory(c).peak_backward_bytes, 17920 + 128);
}

}  // namespace
}  // namespace rcts
