// Pipeline parallelism over MPI (design §16): point-to-point exchange between ranks,
// and an oracle independent of the 1F1B schedule: with dropout off, a pp = 2 (and, at
// 4 ranks, pp = 4, and tp = 2 with sequence parallelism x pp = 2) run of a
// model gives the pp = 1 run's losses (last stage), input gradients (stage 0),
// outputs (last stage) and, by parameter name, every stage's parameters and gradients,
// bit for bit (under TP against the pp = 1 run of the same TP rank).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "reference/parallel/groups.hpp"
#include "tests/mpi/mpi_env.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

using mpi_test::world;

TEST(MpiPointToPoint, RingExchangeAndPairedSends) {
  Communicator& w = world();
  const int n = w.size(), r = w.rank();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  std::vector<int64_t> out = {r, 10 * r, 100 * r}, in(3, -1);
  w.send_recv(out.data(), 24, next, in.data(), 24, prev);
  EXPECT_EQ(in, (std::vector<int64_t>{prev, 10 * prev, 100 * prev}));
  // Even ranks send twice, odd ranks receive in posting order.
  const int peer = r % 2 == 0 ? r + 1 : r - 1;
  if (peer < n) {
    std::vector<int32_t> a = {7 + r}, b = {9 + r}, got(1);
    if (r % 2 == 0) {
      w.send(a.data(), 4, peer);
      w.send(b.data(), 4, peer);
    } else {
      w.recv(got.data(), 4, peer);
      EXPECT_EQ(got[0], 7 + peer);
      w.recv(got.data(), 4, peer);
      EXPECT_EQ(got[0], 9 + peer);
    }
  }
  EXPECT_THROW(w.send(out.data(), 8, r), Error);  // no message to itself
  EXPECT_THROW(w.recv(in.data(), 8, n), Error);   // no such rank
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.nbytes() == b.nbytes() && a.shape() == b.shape() &&
         std::memcmp(a.bytes(), b.bytes(), static_cast<size_t>(a.nbytes())) == 0;
}

// ep > 0: MoE layers (4 experts, top 2) over ep expert-parallel ranks.
Config model(int pp, int tp = 1, int ep = 0) {
  Config c = test_support::tiny_dense(4, 3);
  c.parallel.tensor_model_parallel_size = tp;
  c.parallel.sequence_parallel = tp > 1;
  if (ep > 0) {
    c.model.num_moe_experts = 4;
    c.model.moe_router_topk = 2;
    c.model.moe_ffn_hidden_size = 8;
    c.model.moe_expert_dropout = 0;
    c.parallel.expert_model_parallel_size = ep;
  }
  c.model.attention_dropout = 0;
  c.model.hidden_dropout = 0;  // the stages' masks differ from pp = 1's (seed + 100 * pp_rank)
  c.model.activation_dtype = DType::f32;
  c.run.steps = 2;  // the second step runs on parameters the first step's SGD changed
  c.parallel.pipeline_model_parallel_size = pp;
  return c;
}

// pp stages (every stage holds 4 / pp layers) against the pp = 1 run on this rank (of
// its TP group under tp > 1: the same TP rank holds the same shards).
void expect_stages_equal_one_pass(int pp, int tp = 1, int ep = 0) {
  Communicator& w = world();
  const int e = std::max(ep, 1);
  const GroupLayout layout = make_layout(w.size(), tp, e, 1, pp);
  const ProcessGroups groups = make_groups(w, layout);
  const RankCoords coords = coords_of(layout, w.rank());
  Backend& cpu = cpu::default_backend();
  const GroupLayout one_layout = make_layout(w.size(), tp, e, 1, 1);
  const ProcessGroups one_groups = make_groups(w, one_layout);
  const RankCoords one_coords = coords_of(one_layout, w.rank());
  ASSERT_EQ(one_coords.tp, coords.tp);
  ASSERT_EQ(one_coords.ep, coords.ep);
  // Under tp = ep = 1 this rank alone, all four layers.
  const RunRecord one = tp == 1 && e == 1 ? execute(model(1, 1, ep), cpu)
                                          : execute(model(1, tp, ep), cpu, one_coords, &one_groups);
  const RunRecord staged = execute(model(pp, tp, ep), cpu, coords, &groups);
  const bool first = coords.pp == 0, last = coords.pp == pp - 1;

  ASSERT_EQ(staged.inputs.size(), one.inputs.size());
  ASSERT_EQ(staged.losses.size(), last ? one.losses.size() : 0u);
  for (size_t i = 0; i < one.losses.size() && last; ++i)
    EXPECT_EQ(std::memcmp(&staged.losses[i], &one.losses[i], sizeof(double)), 0) << "loss " << i;
  for (size_t i = 0; i < one.inputs.size(); ++i) {
    if (first) {
      EXPECT_TRUE(same_bits(staged.inputs[i], one.inputs[i])) << "input " << i;
      EXPECT_TRUE(same_bits(staged.input_grads[i], one.input_grads[i])) << "input grad " << i;
    }
    if (last) EXPECT_TRUE(same_bits(staged.outputs[i], one.outputs[i])) << "output " << i;
  }
  std::map<std::string, const Tensor*> by_name;
  for (const auto& p : one.params) by_name[p.name] = &p.tensor;
  for (const auto& g : one.grads) by_name[g.name] = &g.tensor;
  ASSERT_EQ(staged.params.size() * static_cast<size_t>(pp), one.params.size());
  const int per_stage = 4 / pp;
  for (const auto* list : {&staged.params, &staged.grads})
    for (const auto& t : *list) {
      // Global layer indices: stage p holds layers [p * 4 / pp, (p + 1) * 4 / pp).
      ASSERT_TRUE(t.name.starts_with("layers.")) << t.name;
      EXPECT_EQ(std::stoi(t.name.substr(7)) / per_stage, coords.pp) << t.name << " is not a layer of stage " << coords.pp;
      auto it = by_name.find(t.name);
      ASSERT_NE(it, by_name.end()) << t.name << " is not a parameter of the pp = 1 model";
      EXPECT_TRUE(same_bits(t.tensor, *it->second)) << t.name;
    }
}

TEST(MpiPipeline, TwoStagesEqualTheOneStageRunBitwise) {
  if (world().size() % 2 != 0) GTEST_SKIP() << "needs an even world";
  expect_stages_equal_one_pass(2);
}

// Four stages: the middle ones receive and send in both directions.
TEST(MpiPipeline, FourStagesEqualTheOneStageRunBitwise) {
  if (world().size() % 4 != 0) GTEST_SKIP() << "needs a multiple of 4 ranks";
  expect_stages_equal_one_pass(4);
}

// Sequence parallelism across stages: the boundary carries each TP rank's shard, the
// first stage scatters the data and the last gathers for the loss (design §16).
TEST(MpiPipeline, SequenceParallelStagesEqualTheOneStageRunBitwise) {
  if (world().size() % 4 != 0) GTEST_SKIP() << "needs a multiple of 4 ranks";
  expect_stages_equal_one_pass(2, 2);
}

// MoE layers across stages: each stage routes and dispatches its own layers' tokens
// among its EP ranks (design §16).
TEST(MpiPipeline, MoeStagesEqualTheOneStageRunBitwise) {
  if (world().size() % 2 != 0) GTEST_SKIP() << "needs an even world";
  expect_stages_equal_one_pass(2, 1, 1);
  if (world().size() % 4 == 0) expect_stages_equal_one_pass(2, 1, 2);
}

}  // namespace
}  // namespace rcts
