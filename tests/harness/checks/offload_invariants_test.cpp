// The offload invariants of offload_invariants.hpp: the oracle of which groups a
// configuration forms, and synthetic reports that break one clause each (warmup that
// moves, a skipped group, a misplaced margin, a group that moves less than it marked,
// an idle module whose tensors are not recomputed) — each must be named.
#include <gtest/gtest.h>

#include "harness/checks/offload_invariants.hpp"
#include "reference/memory_model/offload_memory.hpp"

namespace rcts::harness {
namespace {

Config dense(int layers, std::vector<std::string> modules) {
  Config c;
  c.model.num_layers = layers;
  c.offload.fine_grained_activation_offloading = true;
  c.offload.offload_modules = std::move(modules);
  return c;
}

using Groups = std::map<std::string, std::vector<int>>;

TEST(ExpectedOffloadGroups, DenseNamesFormAGroupInEveryLayer) {
  EXPECT_EQ(offload_group_layers(dense(3, {"attn_norm", "core_attn"})),
            (Groups{{"attn_norm", {0, 1, 2}}, {"core_attn", {0, 1, 2}}}));
}

TEST(ExpectedOffloadGroups, ExpertNamesOnlyInGroupedMoeLayers) {
  Config c = dense(4, {"expert_fc1", "moe_act", "mlp_norm"});
  c.model.num_moe_experts = 4;
  c.model.moe_layer_freq = 2;
  c.model.moe_grouped_gemm = true;
  EXPECT_EQ(offload_group_layers(c), (Groups{{"expert_fc1", {0, 2}}, {"moe_act", {0, 2}}, {"mlp_norm", {0, 1, 2, 3}}}));
  c.model.moe_grouped_gemm = false;  // sequential experts form no expert group
  EXPECT_EQ(offload_group_layers(c).at("expert_fc1"), std::vector<int>{});
  c.model.moe_grouped_gemm = true;
  c.recompute.moe_layer_recompute = true;  // the whole MoE layer is checkpointed
  EXPECT_EQ(offload_group_layers(c).at("moe_act"), std::vector<int>{});
  EXPECT_EQ(offload_group_layers(c).at("mlp_norm"), (std::vector<int>{0, 1, 2, 3}));
}

TEST(ExpectedOffloadGroups, FullRecomputeCheckpointsFormNoGroup) {
  Config c = dense(4, {"attn_norm"});
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 2;
  EXPECT_EQ(offload_group_layers(c).at("attn_norm"), (std::vector<int>{2, 3}));
  c.recompute.recompute_method = "uniform";
  EXPECT_EQ(offload_group_layers(c).at("attn_norm"), std::vector<int>{});
}

TEST(ExpectedOffloadGroups, LayerLevelAndEval) {
  Config c;
  c.model.num_layers = 3;
  c.offload.cpu_offloading = true;
  c.offload.cpu_offloading_num_layers = 2;
  EXPECT_EQ(offload_group_layers(c), (Groups{{"layer", {0, 1}}}));
  c.run.training = false;
  EXPECT_EQ(offload_group_layers(c), (Groups{{"layer", {}}}));
}

OffloadedTensor saved(const std::string& group, const std::string& tensor, uint64_t storage, int64_t bytes,
                      bool offloaded, const std::string& kept = "", const std::string& producer = "p") {
  return {group, tensor, bytes / 2, offloaded, kept, storage, bytes, producer};
}

// attn_norm and qkv_linear over two layers, three micro-batches (two after warmup);
// attn_norm@1 and qkv_linear@1 are the margins.
RunRecord good_run() {
  RunRecord r;
  r.config = dense(2, {"attn_norm", "qkv_linear"});
  OffloadReport rep;
  rep.iterations = 3;
  rep.host_pool_allocations = {0, 2, 2};
  for (int it = 0; it < 2; ++it) {
    const uint64_t s = 10 * static_cast<uint64_t>(it);
    rep.tensors.push_back(saved("attn_norm@0", "layers.0.input_layernorm.input", s + 1, 64, true));
    rep.tensors.push_back(saved("qkv_linear@0", "layers.0.attention.qkv.input", s + 2, 64, true));
    rep.tensors.push_back(saved("qkv_linear@0", "layers.0.attention.qkv.input.alias", s + 2, 64, true));
    rep.tensors.push_back(saved("attn_norm@1", "layers.1.input_layernorm.input", s + 3, 64, false, "margin"));
    rep.tensors.push_back(saved("qkv_linear@1", "layers.1.attention.qkv.input", s + 4, 64, false, "margin"));
  }
  rep.by_group["attn_norm@0"] = {128, 128, 0, 2, 0};
  rep.by_group["qkv_linear@0"] = {128, 128, 0, 2, 0};  // one storage per micro-batch, though two views
  rep.by_group["attn_norm@1"] = {0, 0, 0, 2, 2};
  rep.by_group["qkv_linear@1"] = {0, 0, 0, 2, 2};
  r.offload = rep;
  r.saved_after_forward = {500, 372, 372};
  r.host_resident_after_forward = {0, 128, 128};
  return r;
}

RunRecord without_offload() {
  RunRecord r;
  r.saved_after_forward = {500, 500, 500};
  return r;
}

void expect_broken(const std::optional<std::string>& why, const std::string& says) {
  ASSERT_TRUE(why) << "expected a violation saying '" << says << "'";
  EXPECT_NE(why->find(says), std::string::npos) << *why;
}

TEST(OffloadInvariants, AGoodReportPasses) {
  const RunRecord r = good_run();
  for (const auto& why : {warmup_moved_nothing(without_offload(), r), groups_moved_their_bytes(r),
                          idle_modules_only_recomputed(r)})
    EXPECT_FALSE(why) << *why;
}

TEST(OffloadInvariants, WarmupMovesNothing) {
  RunRecord r = good_run();
  r.offload->host_pool_allocations[0] = 2;
  expect_broken(warmup_moved_nothing(without_offload(), r), "the warmup micro-batch allocated 2 host buffers");
  r = good_run();
  r.host_resident_after_forward[0] = 64;
  expect_broken(warmup_moved_nothing(without_offload(), r), "end of the warmup forward 64 bytes sat on the host");
  r = good_run();
  r.saved_after_forward[0] = 436;
  expect_broken(warmup_moved_nothing(without_offload(), r), "the device held 436 bytes, 500 without offload");
}

TEST(OffloadInvariants, EveryExpectedGroupCommitsEveryMicroBatch) {
  RunRecord r = good_run();
  r.offload->by_group.erase("qkv_linear@0");
  expect_broken(groups_moved_their_bytes(r), "group qkv_linear@0 committed 0 times in the 2 micro-batches");
  r = good_run();
  r.offload->by_group["core_attn@0"] = {64, 64, 0, 2, 0};
  expect_broken(groups_moved_their_bytes(r), "group core_attn@0 was formed, but design §9 forms no such group");
  r = good_run();
  std::erase_if(r.offload->tensors, [](const OffloadedTensor& t) { return t.group == "attn_norm@0"; });
  r.offload->by_group["attn_norm@0"] = {0, 0, 0, 2, 0};
  expect_broken(groups_moved_their_bytes(r), "group attn_norm@0 saw no saved tensor");
}

TEST(OffloadInvariants, TheMarginIsEachNamesLastGroupAlone) {
  RunRecord r = good_run();
  r.offload->by_group["attn_norm@1"] = {64, 64, 0, 2, 1};
  expect_broken(groups_moved_their_bytes(r), "it was kept 1 of 2 times and moved 64 bytes");
  r = good_run();
  r.offload->by_group["attn_norm@0"] = {0, 0, 0, 2, 2};
  expect_broken(groups_moved_their_bytes(r), "group attn_norm@0 was kept on device as a margin");
}

TEST(OffloadInvariants, EveryOtherGroupMovesWhatItMarked) {
  RunRecord r = good_run();
  r.offload->by_group["attn_norm@0"] = {64, 64, 0, 2, 0};  // one micro-batch's copy skipped
  expect_broken(groups_moved_their_bytes(r), "group attn_norm@0 moved 64 bytes, but the tensors it marked for offload "
                                             "hold 128 bytes");
  r = good_run();
  r.offload->by_group["qkv_linear@0"] = {256, 256, 0, 2, 0};  // the two views copied twice
  expect_broken(groups_moved_their_bytes(r), "group qkv_linear@0 moved 256 bytes");
  r = good_run();
  r.offload->by_group["attn_norm@0"] = {128, 64, 0, 2, 0};
  expect_broken(groups_moved_their_bytes(r), "group attn_norm@0 offloaded 128 bytes but reloaded 64");
}

TEST(OffloadInvariants, AnIdleModuleSavedOnlyRecomputedTensors) {
  RunRecord r = good_run();
  r.config.recompute.recompute_granularity = "selective";
  r.config.recompute.recompute_modules = {"layernorm"};
  for (auto& t : r.offload->tensors)
    if (t.group == "qkv_linear@0") {
      t.offloaded = false;
      t.kept_because = "recomputed";
      t.storage_name = "layers.0.input_layernorm.output";
    }
  r.offload->by_group["qkv_linear@0"] = {0, 0, 0, 2, 0};
  EXPECT_FALSE(idle_modules_only_recomputed(r));
  EXPECT_FALSE(groups_moved_their_bytes(r));

  RunRecord without = r;  // the same keeps without an output-discarding recompute
  without.config.recompute.recompute_modules = {"core_attn"};
  expect_broken(idle_modules_only_recomputed(without), "kept on device as recomputed, but its storage "
                                                       "'layers.0.input_layernorm.output' is no output");
  RunRecord wrong = r;  // a checkpoint's input is not an output-discarding output
  for (auto& t : wrong.offload->tensors)
    if (t.kept_because == "recomputed") t.storage_name = "layers.0.attention.qkv_heads";
  expect_broken(idle_modules_only_recomputed(wrong), "'layers.0.attention.qkv_heads' is no output");
  RunRecord threshold = r;
  for (auto& t : threshold.offload->tensors)
    if (t.kept_because == "recomputed") t.kept_because = "threshold";
  expect_broken(idle_modules_only_recomputed(threshold), "offload module 'qkv_linear' moved no bytes after warmup, "
                                                         "yet layers.0.attention.qkv.input");
  RunRecord parameter = r;
  for (auto& t : parameter.offload->tensors)
    if (t.kept_because == "recomputed") t.kept_because = "parameter";
  expect_broken(idle_modules_only_recomputed(parameter), "kept on device as a parameter");
  parameter.params.push_back({"layers.0.input_layernorm.output", Tensor{}});
  EXPECT_FALSE(idle_modules_only_recomputed(parameter));
}

TEST(OffloadInvariants, AModuleWithOnlyItsMarginCannotMove) {
  RunRecord r = good_run();
  r.config = dense(1, {"attn_norm"});
  r.offload->by_group = {{"attn_norm@0", {0, 0, 0, 2, 2}}};
  expect_broken(idle_modules_only_recomputed(r), "forms only its margin group attn_norm@0");
}

TEST(OffloadInvariants, RecomputedOutputsAreTheOutputDiscardingOnes) {
  Config c;
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"layernorm", "moe_act"};
  EXPECT_TRUE(recomputed_by_output_discarding(c, "layers.2.pre_mlp_layernorm.output"));
  EXPECT_TRUE(recomputed_by_output_discarding(c, "layers.0.moe.experts.dropout.output"));
  EXPECT_FALSE(recomputed_by_output_discarding(c, "layers.0.moe.experts.fc1.output"));
  EXPECT_FALSE(recomputed_by_output_discarding(c, "layers.0.attention.qkv_heads"));
  c.run.training = false;
  EXPECT_FALSE(recomputed_by_output_discarding(c, "layers.2.pre_mlp_layernorm.output"));
}

}  // namespace
}  // namespace rcts::harness
