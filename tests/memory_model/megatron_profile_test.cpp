// The megatron-core-cpu saved-tensor profile against per-layer byte counts measured on
// megatron-core 0.16.1 itself (torch 2.15, CPU): its TransformerBlock built and run as
// the Megatron adapter runs it, with saved-tensor hooks counting every tensor autograd
// held at the end of the forward (the adapter's rule). s = 8, b = 2, h = 16, a = 2 unless
// said. The adapter's CTests judge the same block through dumps.
#include <gtest/gtest.h>

#include "reference/core/error.hpp"
#include "reference/memory_model/saved_profile.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

using test_support::dense;

const SavedProfile& megatron() { return *find_profile("megatron-core-cpu"); }

int64_t total(const std::vector<SavedEntry>& l) {
  int64_t n = 0;
  for (const auto& e : l) n += e.bytes;
  return n;
}

Config with(Config c, DType act, double dropout, std::vector<std::string> selective = {}) {
  c.model.activation_dtype = act;
  c.model.attention_dropout = c.model.hidden_dropout = dropout;
  if (!selective.empty()) {
    c.recompute.recompute_granularity = "selective";
    c.recompute.recompute_modules = std::move(selective);
  }
  return c;
}

int64_t layer0(const Config& c) { return total(stage_inventory(megatron(), c)[0]); }

// cases/full/block.f32.json (ffn 64, dropout 0.1), cases/memory/no_dropout.json (bf16, no dropout),
// cases/output_discarding/layernorm_core_attn.f32.json, cases/selective/mlp.f32.json.
TEST(MegatronProfile, MeasuredDenseLayers) {
  const Config f32 = with(dense({}), DType::f32, 0.1);
  EXPECT_EQ(layer0(f32), 21760);
  EXPECT_EQ(layer0(with(dense({}), DType::bf16, 0.0)), 9984);
  EXPECT_EQ(layer0(with(dense({}), DType::bf16, 0.0, {"core_attn"})), 8452);
  EXPECT_EQ(layer0(with(dense({}), DType::f32, 0.1, {"layernorm", "core_attn"})), 16388);
  EXPECT_EQ(layer0(with(dense({}), DType::f32, 0.1, {"mlp"})), 13568);
}

// SwiGLU, ffn 40: a bf16 probe case with dropout 0.1, and output_discarding.layernorm.swiglu (f32).
TEST(MegatronProfile, MeasuredSwiGlu) {
  Config c = dense({.ffn = 40});
  c.model.activation = "swiglu";
  EXPECT_EQ(layer0(with(c, DType::bf16, 0.1)), 12544);
  EXPECT_EQ(layer0(with(c, DType::bf16, 0.1, {"layernorm"})), 11264);
  EXPECT_EQ(layer0(with(c, DType::bf16, 0.1, {"layernorm", "mlp"})), 6144);
  EXPECT_EQ(layer0(with(c, DType::f32, 0.1, {"layernorm", "core_attn", "mlp"})), 8196);
}

// Full recompute: the chunk's input at its first layer, nothing else; cases/full/block.f32.json's
// block variant (1 layer) and cases/parallel/tp2_distribute.json (TP 2, a = 4, 1-D half).
TEST(MegatronProfile, MeasuredFullRecompute) {
  Config c = with(dense({.layers = 5}), DType::f32, 0.1);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 1;
  const auto inv = stage_inventory(megatron(), c);
  EXPECT_EQ(total(inv[0]), 1024);
  EXPECT_EQ(total(inv[1]), 21760);
  ASSERT_EQ(inv[0].size(), 1u);
  EXPECT_EQ(inv[0][0].shape, (std::vector<int64_t>{8, 2, 16}));

  Config t = with(dense({.layers = 3, .heads = 4}), DType::bf16, 0.1);
  t.parallel.tensor_model_parallel_size = 2;
  EXPECT_EQ(layer0(t), 8448);  // measured on each of the two ranks
  t.recompute.recompute_granularity = "full";
  t.recompute.recompute_method = "uniform";
  t.recompute.recompute_num_layers = 1;
  t.recompute.distribute_saved_activations = true;
  const auto d = stage_inventory(megatron(), t);
  ASSERT_EQ(d[0].size(), 1u);
  EXPECT_EQ(d[0][0].shape, (std::vector<int64_t>{128}));
  EXPECT_EQ(d[0][0].bytes, 256);
}

// The rows a reader sees in a mismatch: the op and where in Megatron the save is made.
TEST(MegatronProfile, RowsNameMegatronSources) {
  const auto inv = stage_inventory(megatron(), with(dense({}), DType::bf16, 0.1, {"core_attn"}));
  bool mask_type = false;
  for (const auto& e : inv[0])
    if (e.row == "core_attn.mask_type") {
      mask_type = true;
      EXPECT_EQ(e.dtype, "i32");
      EXPECT_EQ(e.bytes, 4);
    }
  EXPECT_TRUE(mask_type);
  EXPECT_NE(megatron().row("core_attn.mask_type").source.find("attention.py"), std::string_view::npos);
  EXPECT_NE(megatron().row("dropout.noise").source.find("Dropout.cpp"), std::string_view::npos);
}

TEST(MegatronProfile, SequenceParallelAndPipelineAreNotModelled) {
  Config c = with(dense({.heads = 4}), DType::bf16, 0.1);
  c.parallel.tensor_model_parallel_size = 2;
  EXPECT_EQ(inventory_unmodelled(megatron(), c), "");
  EXPECT_NE(inventory_unmodelled(*find_profile("torch-cpu"), c), "");
  c.parallel.sequence_parallel = true;
  EXPECT_NE(inventory_unmodelled(megatron(), c).find("sequence parallelism"), std::string::npos);
  EXPECT_THROW(stage_inventory(megatron(), c), Error);
}

}  // namespace
}  // namespace rcts
