// The memory check under a saved-tensor profile (harness/checks/memory_inventory.hpp): a
// one-layer f32 block's saves as megatron-core 0.16.1 made them on the CPU (listed from a
// run with saved-tensor hooks: module, op, dtype, shape), matched against the
// megatron-core-cpu profile; then one tensor too many, one missing, one freed.
#include <gtest/gtest.h>

#include "harness/checks/memory_inventory.hpp"
#include "reference/memory_model/saved_profile.hpp"
#include "tests/support/configs.hpp"

namespace rcts::harness {
namespace {

struct Save {
  const char* module;
  const char* op;
  const char* dtype;
  std::vector<int64_t> shape;
};

// s = 8, b = 2, h = 16, a = 2, ffn = 64, f32, dropout 0.1 (cases/full/block.f32.json's layer).
const std::vector<Save> kMegatronLayer = {
    {"layers.0.input_layernorm", "aten::native_layer_norm", "f32", {8, 2, 16}},
    {"layers.0.input_layernorm", "aten::native_layer_norm", "f32", {8, 2, 1}},
    {"layers.0.input_layernorm", "aten::native_layer_norm", "f32", {8, 2, 1}},
    {"layers.0.attention", "aten::empty", "f32", {8, 2, 16}},
    {"layers.0.attention.core", "aten::baddbmm", "f32", {4, 8, 8}},
    {"layers.0.attention.core", "aten::baddbmm", "f32", {4, 8, 8}},
    {"layers.0.attention.core", "aten::_softmax", "f32", {2, 2, 8, 8}},
    {"layers.0.attention.core", "aten::mul", "f32", {2, 2, 8, 8}},
    {"layers.0.attention.core", "aten::bmm", "f32", {4, 8, 8}},
    {"layers.0.attention.core", "aten::bmm", "f32", {4, 8, 8}},
    {"layers.0.attention", "aten::add", "f32", {8, 2, 16}},
    {"layers.0", "aten::mul", "f32", {8, 2, 16}},
    {"layers.0.pre_mlp_layernorm", "aten::native_layer_norm", "f32", {8, 2, 16}},
    {"layers.0.pre_mlp_layernorm", "aten::native_layer_norm", "f32", {8, 2, 1}},
    {"layers.0.pre_mlp_layernorm", "aten::native_layer_norm", "f32", {8, 2, 1}},
    {"layers.0.mlp", "aten::add", "f32", {8, 2, 16}},
    {"layers.0.mlp", "aten::gelu", "f32", {8, 2, 64}},
    {"layers.0.mlp", "aten::add", "f32", {8, 2, 64}},
    {"layers.0", "aten::mul", "f32", {8, 2, 16}},
};

RunRecord run_of(const std::vector<Save>& saves, int64_t freed_bytes_of_last = -1) {
  RunRecord r;
  r.config = test_support::dense({.layers = 1});
  r.config.model.activation_dtype = DType::f32;
  r.memory_profile = "megatron-core-cpu";
  std::vector<SaveRecord> recs;
  std::vector<RunRecord::SaveShape> shapes;
  int64_t held = 0;
  for (size_t k = 0; k < saves.size(); ++k) {
    int64_t bytes = 4;
    for (int64_t d : saves[k].shape) bytes *= d;
    if (k + 1 == saves.size() && freed_bytes_of_last >= 0) bytes = freed_bytes_of_last;
    held += bytes;
    recs.push_back({saves[k].module, "saved." + std::to_string(k), bytes, Category::saved_activation, 100 + k, 0, false});
    shapes.push_back({saves[k].op, saves[k].dtype, saves[k].shape});
  }
  r.saves_per_micro_batch = {recs};
  r.save_shapes_per_micro_batch = {shapes};
  r.saved_bytes_per_layer = {{held}};
  return r;
}

TEST(MemoryInventory, MegatronLayerMatchesItsProfile) {
  std::string detail;
  EXPECT_EQ(inventory_differs(run_of(kMegatronLayer), "baseline", detail), std::nullopt);
  EXPECT_EQ(detail,
            "per-layer saved tensors (dtype, shape) equal profile megatron-core-cpu (19 tensors over 1 layers); "
            "backward peak not compared (the profile has no peak model)");
}

TEST(MemoryInventory, AnExtraTensorIsNamedWithBothTotals) {
  auto saves = kMegatronLayer;
  saves.push_back({"layers.0", "aten::mul", "f32", {8, 2, 16}});
  std::string detail;
  EXPECT_EQ(inventory_differs(run_of(saves), "baseline", detail),
            "baseline: step 0 micro-batch 0: layers.0: extra f32 [8,2,16] (1024 bytes) saved by aten::mul in layers.0, "
            "in no row of profile megatron-core-cpu; layers.0 holds 22784 bytes, profile megatron-core-cpu says 21760");
}

TEST(MemoryInventory, AFreedSaveHoldsNothingAndIsNotMatched) {
  auto saves = kMegatronLayer;
  saves.push_back({"layers.0", "aten::mul", "f32", {8, 2, 16}});
  std::string detail;
  EXPECT_EQ(inventory_differs(run_of(saves, 0), "baseline", detail), std::nullopt) << detail;
}

TEST(MemoryInventory, AMissingTensorNamesTheProfileRow) {
  auto saves = kMegatronLayer;
  saves.erase(saves.begin() + 6);  // the softmax result, f32 [2,2,8,8] as the attention dropout's noise
  std::string detail;
  const auto why = inventory_differs(run_of(saves), "uniform1", detail);
  ASSERT_TRUE(why.has_value());
  const std::string row = std::string(find_profile("megatron-core-cpu")->row("dropout.noise").source);
  EXPECT_EQ(*why, "uniform1: step 0 micro-batch 0: layers.0: missing f32 [2,2,8,8] (1024 bytes), profile "
                  "megatron-core-cpu row dropout.noise: layers.0.attention.core aten::mul keeps other (the scaled keep "
                  "noise), activation dtype, the dropped tensor's shape (" + row + "), not saved by the run (or one of "
                  "rows attention.softmax: same dtype and shape); layers.0 holds 20736 bytes, profile "
                  "megatron-core-cpu says 21760");
  saves = kMegatronLayer;
  saves.erase(saves.begin() + 1);  // the input layernorm's mean: f32 [8,2,1] as either layernorm's rstd
  EXPECT_NE(inventory_differs(run_of(saves), "uniform1", detail)->find("missing f32 [8,2,1] (64 bytes), profile "
                                                                      "megatron-core-cpu row layernorm.rstd"),
            std::string::npos);
}

}  // namespace
}  // namespace rcts::harness
