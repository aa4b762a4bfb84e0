// The data-parallel replica check (ranks.hpp): which world ranks are replicas comes
// from the config's sizes alone, and a replica that differs in one value is named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness/checks/across_ranks.hpp"

namespace rcts::harness {
namespace {

nlohmann::json digest(double loss, int param) {
  return {{"losses", {loss}},
          {"outputs", {7}},
          {"input_grads", {8}},
          {"side_effects", nlohmann::json::object()},
          {"parameters", {{"layers.0.mlp.fc1.weight", param, param + 1}}}};
}

std::vector<std::string> dumps(const std::vector<nlohmann::json>& js) {
  std::vector<std::string> out;
  for (const auto& j : js) out.push_back(j.dump());
  return out;
}

Config sizes(int tp, int pp, int ep = 1, int etp = 1) {
  Config c;
  c.parallel.tensor_model_parallel_size = tp;
  c.parallel.pipeline_model_parallel_size = pp;
  c.parallel.expert_model_parallel_size = ep;
  c.parallel.expert_tensor_parallel_size = etp;
  return c;
}

TEST(DpReplicas, TpRanksAndStagesMayDifferReplicasMayNot) {
  // World 4 at tp 2: ranks 0/2 and 1/3 are replicas; 0 and 1 (TP peers) may differ.
  const auto ok = compare_dp_replicas(dumps({digest(1, 10), digest(1, 20), digest(1, 10), digest(1, 20)}), sizes(2, 1),
                                      "baseline");
  EXPECT_EQ(ok.outcome, Outcome::pass) << ok.detail;
  EXPECT_NE(ok.detail.find("2 data-parallel replica pairs"), std::string::npos) << ok.detail;
  const auto bad = compare_dp_replicas(dumps({digest(1, 10), digest(1, 20), digest(1, 10), digest(1, 21)}), sizes(2, 1),
                                       "uniform1");
  EXPECT_EQ(bad.outcome, Outcome::fail);
  EXPECT_NE(bad.detail.find("uniform1: world ranks 1 and 3 (data-parallel replicas"), std::string::npos) << bad.detail;
  EXPECT_NE(bad.detail.find("layers.0.mlp.fc1.weight"), std::string::npos) << bad.detail;
}

TEST(DpReplicas, PipelineStagesAreTheSlowestAxis) {
  // World 4 at pp 2: stage 0 = ranks 0, 1 (replicas), stage 1 = ranks 2, 3.
  const auto bad = compare_dp_replicas(dumps({digest(0, 1), digest(0, 1), digest(2, 5), digest(3, 5)}), sizes(1, 2),
                                       "baseline");
  EXPECT_EQ(bad.outcome, Outcome::fail);
  EXPECT_NE(bad.detail.find("world ranks 2 and 3"), std::string::npos) << bad.detail;
  EXPECT_NE(bad.detail.find("different losses"), std::string::npos) << bad.detail;
  EXPECT_EQ(compare_dp_replicas(dumps({digest(0, 1), digest(0, 1), digest(2, 5), digest(2, 5)}), sizes(1, 2), "b").outcome,
            Outcome::pass);
}

TEST(DpReplicas, ExpertRanksAreNotReplicas) {
  // World 4 at ep 2: EP ranks r % 2; ranks 0/2 and 1/3 are replicas, 0 and 1 hold other experts.
  const auto ok = compare_dp_replicas(dumps({digest(1, 1), digest(2, 2), digest(1, 1), digest(2, 2)}), sizes(1, 1, 2),
                                      "baseline");
  EXPECT_EQ(ok.outcome, Outcome::pass) << ok.detail;
  const auto no_pairs = compare_dp_replicas(dumps({digest(1, 1), digest(2, 2)}), sizes(2, 1), "baseline");
  EXPECT_EQ(no_pairs.outcome, Outcome::pass);
  EXPECT_NE(no_pairs.detail.find("no data-parallel replicas"), std::string::npos) << no_pairs.detail;
}

}  // namespace
}  // namespace rcts::harness
