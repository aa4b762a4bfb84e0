// The TP replica check (ranks.hpp): which parameters count as replicated, and
// synthetic per-rank digests that differ in one replicated value or gradient — the
// check must name the parameter; shards and experts of other EP ranks may differ.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/checks/across_ranks.hpp"
#include "harness/ranks/ranks.hpp"

namespace rcts::harness {
namespace {

TEST(TpReplicas, ReplicatedParametersByName) {
  for (const char* name : {"layers.0.input_layernorm.weight", "layers.3.pre_mlp_layernorm.bias",
                           "layers.1.attention.proj.bias", "layers.2.mlp.fc2.bias", "layers.0.moe.router.weight",
                           // MLA (design §14): down-projections and the q/kv norms are replicated.
                           "layers.0.attention.linear_kv_down_proj.weight", "layers.1.attention.linear_q_down_proj.weight",
                           "layers.0.attention.kv_layernorm.weight", "layers.0.attention.q_layernorm.bias"})
    EXPECT_TRUE(tp_replicated_parameter(name)) << name;
  for (const char* name : {"layers.0.attention.linear_kv_up_proj.weight", "layers.0.attention.linear_q_up_proj.weight",
                           "layers.0.attention.linear_q_proj.weight"})
    EXPECT_FALSE(tp_replicated_parameter(name)) << name;
  for (const char* name : {"layers.0.attention.qkv.weight", "layers.0.attention.qkv.bias", "layers.0.attention.proj.weight",
                           "layers.0.mlp.fc1.bias", "layers.0.mlp.fc2.weight", "layers.0.moe.shared_experts.fc2.weight",
                           "layers.0.moe.experts.1.fc1.weight"})
    EXPECT_FALSE(tp_replicated_parameter(name)) << name;
}

// One rank's digest: two losses, one output each, a layernorm bias and an expert.
nlohmann::json rank_digest() {
  return {{"losses", {0.5, 0.25}},
          {"outputs", {11, 12}},
          {"parameters", {{"layers.0.input_layernorm.bias", 100, 200, false},
                          {"layers.0.moe.experts.0.fc1.weight", 300, 400, true}}}};
}

std::vector<std::string> ranks(const std::vector<nlohmann::json>& js) {
  std::vector<std::string> out;
  for (const auto& j : js) out.push_back(j.dump());
  return out;
}

TEST(TpReplicas, IdenticalReplicasPass) {
  const auto r = compare_tp_replicas(ranks({rank_digest(), rank_digest()}), make_layout(2, 2, 1, 1), "baseline");
  EXPECT_EQ(r.outcome, Outcome::pass) << r.detail;
  EXPECT_NE(r.detail.find("2 replicated parameters and their gradients"), std::string::npos) << r.detail;
}

TEST(TpReplicas, AReplicatedGradientThatDiffersIsNamed) {
  nlohmann::json other = rank_digest();
  other["parameters"][0][2] = 201;
  const auto r = compare_tp_replicas(ranks({rank_digest(), other}), make_layout(2, 2, 1, 1), "core_attn");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.detail.find("core_attn: world ranks 0 and 1 (one TP group) hold different gradients of "
                          "layers.0.input_layernorm.bias"),
            std::string::npos)
      << r.detail;
}

TEST(TpReplicas, AReplicatedValueThatDiffersIsNamed) {
  nlohmann::json other = rank_digest();
  other["parameters"][0][1] = 101;
  const auto r = compare_tp_replicas(ranks({rank_digest(), other}), make_layout(2, 2, 1, 1), "baseline");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.detail.find("different values of layers.0.input_layernorm.bias"), std::string::npos) << r.detail;
}

TEST(TpReplicas, LossesAndOutputsStillCompared) {
  nlohmann::json other = rank_digest();
  other["outputs"][1] = 13;
  const auto r = compare_tp_replicas(ranks({rank_digest(), other}), make_layout(2, 2, 1, 1), "baseline");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.detail.find("different losses or outputs"), std::string::npos) << r.detail;
}

TEST(TpReplicas, ExpertsAreReplicasOnlyWithinOneEpRank) {
  nlohmann::json other = rank_digest();
  other["parameters"][1][2] = 401;
  // TP 2, EP 1: both ranks hold expert 0 in full.
  const auto same = compare_tp_replicas(ranks({rank_digest(), other}), make_layout(2, 2, 1, 1), "baseline");
  EXPECT_EQ(same.outcome, Outcome::fail);
  EXPECT_NE(same.detail.find("gradients of layers.0.moe.experts.0.fc1.weight"), std::string::npos) << same.detail;
  // TP 2, EP 2: the two ranks hold different experts (here under the same name).
  const auto apart = compare_tp_replicas(ranks({rank_digest(), other}), make_layout(2, 2, 2, 1), "baseline");
  EXPECT_EQ(apart.outcome, Outcome::pass) << apart.detail;
}

TEST(TpReplicas, OnlyRanksOfOneTpGroupAreCompared) {
  nlohmann::json other = rank_digest();
  other["parameters"][0][2] = 201;
  // TP 2 x DP 2: ranks 0, 1 and ranks 2, 3 are the TP groups.
  const auto r = compare_tp_replicas(ranks({rank_digest(), rank_digest(), other, other}), make_layout(4, 2, 1, 1), "v");
  EXPECT_EQ(r.outcome, Outcome::pass) << r.detail;
  const auto broken =
      compare_tp_replicas(ranks({rank_digest(), rank_digest(), rank_digest(), other}), make_layout(4, 2, 1, 1), "v");
  EXPECT_EQ(broken.outcome, Outcome::fail);
  EXPECT_NE(broken.detail.find("world ranks 2 and 3"), std::string::npos) << broken.detail;
}

TEST(TpReplicas, NoReplicatedParameterIsAFailure) {
  nlohmann::json none = rank_digest();
  none["parameters"] = nlohmann::json::array();
  const auto r = compare_tp_replicas(ranks({none, none}), make_layout(2, 2, 1, 1), "baseline");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.detail.find("hold no replicated parameter"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace rcts::harness
