// The torch-cpu saved-tensor profile against byte counts worked out by hand from its
// table (reference/memory_model/saved_profile.hpp): s = 8, b = 2, h = 16, a = 2,
// ffn = 64, so T = 16 tokens, B = 4, dh = 8. adapters' tests/adapter/profile_count_test.py
// counts the same block independently with PyTorch's own saved-tensor hooks.
#include <gtest/gtest.h>

#include "reference/core/error.hpp"
#include "reference/memory_model/saved_profile.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

Config small(DType act, double dropout) {
  Config c = test_support::tiny_dense(2, 1);
  c.model.activation_dtype = act;
  c.model.attention_dropout = c.model.hidden_dropout = dropout;
  return c;
}

int64_t total(const std::vector<SavedEntry>& l) {
  int64_t n = 0;
  for (const auto& e : l) n += e.bytes;
  return n;
}

const SavedProfile& torch_cpu() { return *find_profile("torch-cpu"); }

TEST(SavedProfile, Names) {
  ASSERT_NE(find_profile("torch-cpu"), nullptr);
  ASSERT_NE(find_profile("korthikanti"), nullptr);
  EXPECT_EQ(find_profile("torch-cuda"), nullptr);
  ASSERT_NE(find_profile("megatron-core-cpu"), nullptr);
  EXPECT_EQ(profile_names(), (std::vector<std::string>{"korthikanti", "torch-cpu", "megatron-core-cpu"}));
  EXPECT_THROW(torch_cpu().row("no.such.row"), Error);
}

// bf16, dropout on: per layer LN1 1024 + 64 + 64, qkv input 1024, q 1024, k 1024, causal
// mask 64, softmax 1024, attention mask 256, probs 1024, v 1024, proj input 1024, hidden
// mask 256, LN2 1152, fc1 input 1024, GeLU input 4096, fc2 input 4096, hidden mask 256.
TEST(SavedProfile, TorchCpuBf16WithDropout) {
  const auto inv = stage_inventory(torch_cpu(), small(DType::bf16, 0.1));
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_EQ(total(inv[0]), 19520);
  EXPECT_EQ(total(inv[1]), 19520);
  EXPECT_EQ(inv[0].size(), 20u);
  const SavedEntry& rstd = inv[0][2];
  EXPECT_EQ(rstd.module, "input_layernorm");
  EXPECT_EQ(rstd.op, "aten::native_layer_norm");
  EXPECT_EQ(rstd.dtype, "f32");
  EXPECT_EQ(rstd.shape, (std::vector<int64_t>{16, 1}));
  EXPECT_EQ(rstd.bytes, 64);
  EXPECT_EQ(rstd.row, "layernorm.rstd");
}

// f32 without dropout: no masks, and probs x v keeps the softmax result itself.
TEST(SavedProfile, TorchCpuF32NoDropout) {
  const auto inv = stage_inventory(torch_cpu(), small(DType::f32, 0.0));
  EXPECT_EQ(total(inv[0]), 17728);
  for (const auto& e : inv[0]) EXPECT_NE(e.row, "attention.context.probs");
}

TEST(SavedProfile, TorchCpuSelectiveAndFull) {
  Config c = small(DType::bf16, 0.1);
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn"};
  // 19520 - (q, k, causal, softmax, mask, probs, v: 5440) + qkv's output bf16 [16,48] 1536
  EXPECT_EQ(total(stage_inventory(torch_cpu(), c)[0]), 15616);
  c.recompute.recompute_modules = {"mlp"};
  // 19520 - (fc1 1024, GeLU 4096, fc2 4096) + LN2 output bf16 [16,16] 512
  EXPECT_EQ(total(stage_inventory(torch_cpu(), c)[0]), 10816);
  c.recompute.recompute_modules = {"layernorm"};
  // 19520 - 2 x 1152 + 2 x 512 (each LN's bf16 input)
  EXPECT_EQ(total(stage_inventory(torch_cpu(), c)[0]), 18240);
  c.recompute = {};
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 2;
  const auto full = stage_inventory(torch_cpu(), c);
  EXPECT_EQ(total(full[0]), 512);  // the chunk's bf16 input [16,16]
  EXPECT_EQ(total(full[1]), 0);
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 1;
  const auto block = stage_inventory(torch_cpu(), c);
  EXPECT_EQ(total(block[0]), 512);
  EXPECT_EQ(total(block[1]), 19520);
}

TEST(SavedProfile, OutsideTheProfileIsSaid) {
  Config c = small(DType::f32, 0.0);
  c.offload.cpu_offloading = true;
  c.offload.cpu_offloading_num_layers = 1;
  EXPECT_NE(inventory_unmodelled(torch_cpu(), c).find("offload"), std::string::npos);
  EXPECT_THROW(stage_inventory(torch_cpu(), c), Error);
  c = small(DType::f32, 0.0);
  c.run.training = false;
  EXPECT_EQ(total(stage_inventory(torch_cpu(), c)[0]), 0);
  EXPECT_NE(inventory_unmodelled(*find_profile("korthikanti"), c), "");
}

}  // namespace
}  // namespace rcts
