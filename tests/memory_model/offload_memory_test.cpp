// The offloaded share of the memory model (offload_memory.hpp, design §9) by hand-derived
// bytes, bf16, s = 8, b = 2 (sb = 16), a = 2, threshold 100 elements, every fine-grained
// module. The last layer forming a name is its margin and moves nothing.
//
// MLA (h = 32, q_lora_rank 12, kv_lora_rank 10, dq = 6 + 4, dv = 5), layers 0 and 1:
//   attn_norm   LN1 input 2*16*32                                        = 1024
//   qkv_linear  kv_down input 1024 + q_layernorm, q_up inputs 384 each
//               + kv_layernorm, kv_up inputs 320 each                     = 2432
//   core_attn   q, k 640 each, v 320, softmax and dropout out 512 each,
//               mask 256                                                  = 2880
//   attn_proj   320;  mlp_norm LN2 input 1024;  layer                     = 7680
// Under mla_up_proj k_pos_emb (64 elements) joins qkv_linear but stays under the
// threshold, and q, k, v are recomputed, so core_attn moves only the s² tensors.
//
// Hybrid GDN (h = 16, pattern 1,0,1,0): a GDN layer moves only mlp_norm (LN2 input 512);
// attention layer 1 moves attn_norm 512, qkv_linear 512, core_attn (q, k, v one storage
// 1536, softmax and dropout out 512 each, mask 256) 2816, attn_proj 512, mlp_norm 512.
// Layer 3 is the margin of every name.
#include <gtest/gtest.h>

#include "reference/memory_model/offload_memory.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

const std::vector<std::string> kAll = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"};

Config base(int layers, int h) {  // the tiny dense block, every fine-grained module offloaded
  Config c = test_support::dense({.layers = layers, .hidden = h});
  c.offload.fine_grained_activation_offloading = true;
  c.offload.offload_modules = kAll;
  c.offload.min_offloaded_tensor_size = 100;
  return c;
}

Config mla() {
  Config c = base(3, 32);
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = 12;
  c.model.kv_lora_rank = 10;
  c.model.qk_head_dim = 6;
  c.model.qk_pos_emb_head_dim = 4;
  c.model.v_head_dim = 5;
  return c;
}

Config gdn() {
  Config c = base(4, 16);
  c.model.gated_delta_net = true;
  c.model.linear_attention_pattern = {1, 0, 1, 0};
  c.model.linear_num_key_heads = 2;
  c.model.linear_num_value_heads = 4;
  c.model.linear_key_head_dim = 4;
  c.model.linear_value_head_dim = 4;
  c.model.linear_conv_kernel_dim = 3;
  return c;
}

OffloadShare share_of(const Config& c) { return offload_share(c, stage_memory(c)); }

TEST(OffloadMemory, MlaGroupsByHand) {
  const OffloadShare s = share_of(mla());
  const std::map<std::string, int64_t> want = {
      {"attn_norm", 1024}, {"qkv_linear", 2432}, {"core_attn", 2880}, {"attn_proj", 320}, {"mlp_norm", 1024}};
  EXPECT_EQ(s.per_layer.at(0), want);
  EXPECT_EQ(s.per_layer.at(1), want);
  EXPECT_TRUE(s.per_layer.at(2).empty()) << "the margin layer of every name";
  EXPECT_EQ(s.layer_bytes(0), 7680);
}

TEST(OffloadMemory, MlaUpProjRecomputesQkvAndKeepsKPosEmbUnderTheThreshold) {
  Config c = mla();
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"mla_up_proj"};
  const OffloadShare s = share_of(c);
  EXPECT_EQ(s.per_layer.at(0).at("qkv_linear"), 2432);
  EXPECT_EQ(s.per_layer.at(0).at("core_attn"), 512 + 256 + 512);
  c.offload.min_offloaded_tensor_size = 64;
  EXPECT_EQ(share_of(c).per_layer.at(0).at("qkv_linear"), 2432 + 128);
}

TEST(OffloadMemory, GdnLayersMoveOnlyMlpNorm) {
  const OffloadShare s = share_of(gdn());
  EXPECT_EQ(s.per_layer.at(0), (std::map<std::string, int64_t>{{"mlp_norm", 512}}));
  EXPECT_EQ(s.per_layer.at(1), (std::map<std::string, int64_t>{
                                   {"attn_norm", 512}, {"qkv_linear", 512}, {"core_attn", 2816}, {"attn_proj", 512},
                                   {"mlp_norm", 512}}));
  EXPECT_EQ(s.per_layer.at(2), (std::map<std::string, int64_t>{{"mlp_norm", 512}}));
  EXPECT_TRUE(s.per_layer.at(3).empty());
}

TEST(OffloadMemory, FullRecomputeLayersAndEvalMoveNothing) {
  Config c = gdn();
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 1;
  EXPECT_TRUE(share_of(c).per_layer.at(0).empty()) << "inside the checkpoint";
  EXPECT_EQ(share_of(c).layer_bytes(1), 4864);
  c.run.training = false;
  EXPECT_EQ(share_of(c).layer_bytes(1), 0);
}

TEST(OffloadMemory, LayerLevelMovesEveryTensorOfItsLayers) {
  Config c = mla();
  c.offload.fine_grained_activation_offloading = false;
  c.offload.offload_modules.clear();
  c.offload.cpu_offloading = true;
  c.offload.cpu_offloading_num_layers = 1;
  const StageMemory st = stage_memory(c);
  const OffloadShare s = offload_share(c, st);
  // Every tensor of layer 0 has at least 100 elements (the masks 256 and 512).
  EXPECT_EQ(s.layer_bytes(0), st.layers.at(0).total());
  EXPECT_EQ(s.layer_bytes(1), 0);
}

TEST(OffloadMemory, TimedStreamsAreNotModelled) {
  Config c = mla();
  EXPECT_EQ(offload_share_unmodelled(c), "");
  c.offload.link_bandwidth_gbps = 10;
  EXPECT_NE(offload_share_unmodelled(c), "");
}

}  // namespace
}  // namespace rcts
