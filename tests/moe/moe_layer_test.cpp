// MoeLayer on one rank: router routing and aux loss, determinism (repeat runs, 1 vs 2
// OpenMP threads), grouped vs sequential experts, selective recompute (moe_act,
// shared_experts) bitwise against no recompute with the aux-loss side effect applied
// once, recompute counters, mask log, RNG non-pollution, and configuration errors.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <set>

#include "backends/cpu/cpu_backend.hpp"
#include "moe_test_util.hpp"
#include "reference/core/faults.hpp"
#include "reference/recompute/checkpoint_function.hpp"
#include "reference/recompute/checkpoint_state.hpp"

namespace rcts {
namespace {

using namespace moe_test;

// --- router -----------------------------------------------------------------------

// A zero router weight gives uniform probabilities: every token picks experts 0 and 1
// with weight 1/E, and the aux loss is coeff * E * (1/2 * 1/E + 1/2 * 1/E) = coeff.
TEST(MoeRouter, UniformProbabilitiesRouteToLowestExpertsAndGiveKnownAuxLoss) {
  for (DType dt : {DType::f64, DType::bf16}) {
    Config c = small_config(dt);
    Runtime rt(c, cpu::default_backend());
    MoeRouter router(rt, kPath);
    router.weight().value.fill_bytes(0);
    Tensor x = rt.activation({tokens_of(c), c.model.hidden_size}, "x");
    fill_uniform(x, 1, "x", 1.0);
    SaveContext ctx(kPath, nullptr, true);
    RouterOutput r = router.forward(ctx.child("router"), x);
    for (int64_t t = 0; t < tokens_of(c); ++t) {
      EXPECT_EQ(r.topk.data<int32_t>()[t * 2 + 0], 0);
      EXPECT_EQ(r.topk.data<int32_t>()[t * 2 + 1], 1);
    }
    if (dt == DType::f64) {
      EXPECT_EQ(r.weights.data<double>()[0], 0.25);  // not renormalised over the k chosen
      EXPECT_NEAR(rt.side_effects.at(std::string(kPath) + ".aux_loss"), 0.01, 1e-15);
    } else {
      EXPECT_EQ(r.weights.data<float>()[0], 0.25f);
      EXPECT_NEAR(rt.side_effects.at(std::string(kPath) + ".aux_loss"), 0.01, 1e-8);
    }
  }
}

TEST(MoeRouter, EvalRecordsNoAuxLoss) {
  Config c = small_config(DType::bf16);
  c.run.training = false;
  LayerRun r = run_layer(c);
  EXPECT_EQ(r.side_effects.count(std::string(kPath) + ".aux_loss"), 0u);
  EXPECT_EQ(count(r, kPath), (ForwardCount{1, 0}));
}

// --- determinism -------------------------------------------------------------------

Config full_features(bool grouped) {
  Config c = bf16_config();
  c.model.moe_grouped_gemm = grouped;
  c.model.moe_shared_expert_intermediate_size = 16;
  c.model.moe_expert_dropout = 0.1;
  return c;
}

TEST(MoeDeterminism, SameResultTwice) {
  for (bool grouped : {true, false}) {
    Config c = full_features(grouped);
    LayerRun a = run_layer(c), b = run_layer(c);
    expect_bitwise(a, b, grouped ? "grouped" : "sequential");
    EXPECT_EQ(a.side_effects, b.side_effects);
    EXPECT_EQ(a.rng_after, b.rng_after);
  }
}

TEST(MoeDeterminism, OneAndTwoThreadsGiveIdenticalBits) {
  const int before = omp_get_max_threads();
  for (bool grouped : {true, false}) {
    for (DType dt : {DType::bf16, DType::f32}) {
      Config c = full_features(grouped);
      c.model.activation_dtype = dt;
      c.model.hidden_size = 128;
      c.model.moe_ffn_hidden_size = 192;
      c.model.seq_length = 128;
      omp_set_num_threads(1);
      LayerRun one = run_layer(c);
      omp_set_num_threads(2);
      LayerRun two = run_layer(c);
      expect_bitwise(one, two, std::string(grouped ? "grouped " : "sequential ") + std::string(dtype_name(dt)));
    }
  }
  omp_set_num_threads(before);
}

// Without expert dropout the two expert implementations run the same GEMMs over the
// same rows: identical bits.
TEST(MoeDeterminism, GroupedAndSequentialExpertsAgreeWithoutDropout) {
  Config c = full_features(true);
  c.model.moe_expert_dropout = 0;
  LayerRun grouped = run_layer(c);
  c.model.moe_grouped_gemm = false;
  LayerRun sequential = run_layer(c);
  EXPECT_TRUE(same_bits(grouped.out, sequential.out));
  EXPECT_TRUE(same_bits(grouped.dx, sequential.dx));
  ASSERT_EQ(grouped.param_names, sequential.param_names);
  for (size_t i = 0; i < grouped.grads.size(); ++i)
    EXPECT_TRUE(same_bits(grouped.grads[i], sequential.grads[i])) << grouped.param_names[i];
}

TEST(MoeDeterminism, ExpertDropoutDrawsFromExpertParallelRng) {
  for (bool grouped : {true, false}) {
    LayerRun r = run_layer(full_features(grouped));
    ASSERT_FALSE(r.masks.empty());
    for (const auto& m : r.masks) {
      EXPECT_EQ(m.kind, "expert");
      EXPECT_EQ(m.generator, kExpertParallelRng);
      EXPECT_FALSE(m.recompute);
    }
    if (grouped) {
      ASSERT_EQ(r.masks.size(), 1u);
      EXPECT_EQ(r.masks[0].site, std::string(kPath) + ".experts.dropout");
    }
  }
}

// --- selective recompute -----------------------------------------------------------

struct RecomputeCase {
  bool grouped;
  std::vector<std::string> modules;
};

std::string describe(const RecomputeCase& rc) {
  std::string s = rc.grouped ? "grouped [" : "sequential [";
  for (auto& m : rc.modules) s += m + " ";
  return s + "]";
}

TEST(MoeRecompute, BitwiseEqualToNoRecomputeAndSideEffectOnce) {
  const std::string aux = std::string(kPath) + ".aux_loss";
  const std::vector<RecomputeCase> cases = {
      {true, {"moe_act"}},
      {true, {"shared_experts"}},
      {true, {"moe_act", "shared_experts"}},
      {false, {"shared_experts"}},
  };
  for (const auto& rc : cases) {
    SCOPED_TRACE(describe(rc));
    Config base = full_features(rc.grouped);
    base.recompute.recompute_granularity = "selective";
    base.recompute.recompute_modules = {};
    const LayerRun ref = run_layer(base);
    Config v = base;
    v.recompute.recompute_modules = rc.modules;
    const LayerRun r = run_layer(v);
    expect_bitwise(ref, r, describe(rc));

    const bool act = std::find(rc.modules.begin(), rc.modules.end(), "moe_act") != rc.modules.end();
    const bool shared = std::find(rc.modules.begin(), rc.modules.end(), "shared_experts") != rc.modules.end();
    EXPECT_EQ(count(r, kPath), (ForwardCount{1, 0}));
    EXPECT_EQ(count(r, std::string(kPath) + ".experts.act"), (ForwardCount{1, act ? 1 : 0}));
    EXPECT_EQ(count(r, std::string(kPath) + ".shared_experts"), (ForwardCount{1, shared ? 1 : 0}));
    EXPECT_EQ(count(ref, std::string(kPath) + ".experts.act"), (ForwardCount{1, 0}));

    // The aux loss is recorded once, with the baseline's value.
    ASSERT_EQ(ref.side_effects.count(aux), 1u);
    EXPECT_GT(ref.side_effects.at(aux), 0);
    EXPECT_EQ(r.side_effects, ref.side_effects);
    // Recompute does not pollute the RNG streams.
    EXPECT_EQ(r.rng_after, ref.rng_after) << r.rng_after.to_string() << " vs " << ref.rng_after.to_string();

    // Masks: the originals are the baseline's; a recompute redraws the same mask.
    std::vector<MaskRecord> original, redrawn;
    for (const auto& m : r.masks) (m.recompute ? redrawn : original).push_back(m);
    ASSERT_EQ(original.size(), ref.masks.size());
    for (size_t i = 0; i < original.size(); ++i) {
      EXPECT_EQ(original[i].site, ref.masks[i].site);
      EXPECT_EQ(original[i].digest, ref.masks[i].digest);
      EXPECT_EQ(original[i].offset, ref.masks[i].offset);
    }
    EXPECT_EQ(redrawn.size(), act ? original.size() : 0u);
    for (size_t i = 0; i < redrawn.size(); ++i) {
      EXPECT_EQ(redrawn[i].site, original[i].site);
      EXPECT_EQ(redrawn[i].seed, original[i].seed);
      EXPECT_EQ(redrawn[i].offset, original[i].offset);
      EXPECT_EQ(redrawn[i].digest, original[i].digest);
    }

    // Memory after forward: moe_act keeps neither the activation output (bf16, read by
    // fc2) nor the dropout mask (u8): 3 bytes per element of (tokens*k, F).
    const int64_t rows = tokens_of(base) * base.model.moe_router_topk, F = base.model.moe_ffn_hidden_size;
    if (act && !shared) {
      EXPECT_EQ(ref.saved_after_forward - r.saved_after_forward, rows * F * 3);
    }
    if (shared) {
      EXPECT_LT(r.saved_after_forward, ref.saved_after_forward);
    }
  }
}

TEST(MoeRecompute, EvalNeverRecomputes) {
  Config c = full_features(true);
  c.run.training = false;
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"moe_act", "shared_experts"};
  LayerRun r = run_layer(c);
  EXPECT_EQ(count(r, std::string(kPath) + ".experts.act"), (ForwardCount{1, 0}));
  EXPECT_EQ(count(r, std::string(kPath) + ".shared_experts"), (ForwardCount{1, 0}));
  EXPECT_TRUE(r.masks.empty());  // no expert dropout in eval
  c.recompute.recompute_modules = {};
  expect_bitwise(run_layer(c), r, "eval");
}

// The late-recompute mutant makes fc2's backward read the released activation output:
// a clear error, not silently wrong gradients.
TEST(MoeRecompute, LateMoeActRecomputeIsAnError) {
  Config c = full_features(true);
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"moe_act"};
  FaultScope fault(Fault::late_output_recompute);
  try {
    run_layer(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("released"), std::string::npos) << e.what();
  }
}

// The side-effect mutant applies the aux loss again in a recompute: visible when the
// whole layer is recomputed (as TransformerLayer does for recompute module "moe").
TEST(MoeRecompute, WholeLayerCheckpointAddsAuxLossOnce) {
  Config c = full_features(true);
  const std::string aux = std::string(kPath) + ".aux_loss";
  auto run = [&](bool mutant) {
    std::unique_ptr<FaultScope> fault;
    if (mutant) fault = std::make_unique<FaultScope>(Fault::side_effect_twice);
    Runtime rt(c, cpu::default_backend());
    seed_runtime(rt);
    MoeLayer layer(rt, kPath);
    Tensor x = rt.activation({tokens_of(c), c.model.hidden_size}, "x");
    fill_uniform(x, 777, "x", 1.0);
    SaveContext root(kPath, &rt.save_log, true);
    Tensor y = checkpoint::forward(rt.rng, layer, root.child("#ck"), {x}).at(0);
    Tensor dy = rt.activation(y.shape(), "dy");
    fill_uniform(dy, 778, "dy", 1.0);
    checkpoint::backward(rt.rng, layer, root.child("#ck"), {dy});
    EXPECT_EQ(rt.counters.get(kPath), (ForwardCount{1, 1}));
    return rt.side_effects.at(aux);
  };
  const double once = run(false);
  LayerRun plain = run_layer(c);
  EXPECT_EQ(once, plain.side_effects.at(aux));
  EXPECT_EQ(run(true), 2 * once);
}

// Checkpointing the whole layer with moe_act and shared_experts recompute inside:
// nested recomputes, still bitwise equal, aux loss once, each region counted once more.
TEST(MoeRecompute, WholeLayerCheckpointWithInnerRecompute) {
  Config base = full_features(true);
  base.recompute.recompute_granularity = "selective";
  base.recompute.recompute_modules = {};
  const LayerRun ref = run_layer(base);
  Config v = base;
  v.recompute.recompute_modules = {"moe_act", "shared_experts"};
  const LayerRun r = run_layer(v, true);
  expect_bitwise(ref, r, "whole layer + moe_act + shared_experts");
  EXPECT_EQ(r.side_effects, ref.side_effects);
  EXPECT_EQ(r.rng_after, ref.rng_after);
  EXPECT_EQ(count(r, kPath), (ForwardCount{1, 1}));
  // Original forward, the layer's recompute, then the inner recompute in its backward.
  EXPECT_EQ(count(r, std::string(kPath) + ".experts.act"), (ForwardCount{1, 2}));
  EXPECT_EQ(count(r, std::string(kPath) + ".shared_experts"), (ForwardCount{1, 2}));
}

// --- configuration errors ------------------------------------------------------------

void expect_error(const Config& c, const std::string& needle) {
  Runtime rt(c, cpu::default_backend());
  try {
    MoeLayer layer(rt, kPath);
    FAIL() << "expected an error mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(kPath), std::string::npos) << e.message();
  }
}

TEST(MoeConfig, Errors) {
  Config c = small_config();
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"moe_act"};
  c.model.moe_grouped_gemm = false;
  expect_error(c, "moe_grouped_gemm");

  c = small_config();
  c.parallel.expert_model_parallel_size = 2;
  expect_error(c, "expert_model_parallel_size");

  c = small_config();
  c.parallel.expert_tensor_parallel_size = 2;
  expect_error(c, "expert_tensor_parallel_size");

  c = small_config();
  c.model.moe_router_topk = 5;
  expect_error(c, "moe_router_topk");

  c = small_config();
  c.model.num_moe_experts = 0;
  expect_error(c, "num_moe_experts");
}

// Parameter names are keyed by global expert index and identical in both modes.
TEST(MoeConfig, ParameterNames) {
  Config c = small_config();
  c.model.moe_shared_expert_intermediate_size = 4;
  Runtime rt(c, cpu::default_backend());
  MoeLayer layer(rt, kPath);
  std::vector<Parameter*> p;
  layer.parameters(p);
  std::vector<std::string> names;
  for (auto* q : p) names.push_back(q->name);
  const std::vector<std::string> expect = {
      "layers.0.moe.router.weight",          "layers.0.moe.experts.0.fc1.weight",
      "layers.0.moe.experts.0.fc2.weight",   "layers.0.moe.experts.1.fc1.weight",
      "layers.0.moe.experts.1.fc2.weight",   "layers.0.moe.experts.2.fc1.weight",
      "layers.0.moe.experts.2.fc2.weight",   "layers.0.moe.experts.3.fc1.weight",
      "layers.0.moe.experts.3.fc2.weight",   "layers.0.moe.shared_experts.fc1.weight",
      "layers.0.moe.shared_experts.fc2.weight"};
  EXPECT_EQ(names, expect);
}

// Saved tensors carry the documented names (grouped: the concatenated ones).
TEST(MoeConfig, SavedTensorNames) {
  for (bool grouped : {true, false}) {
    Config c = full_features(grouped);
    Runtime rt(c, cpu::default_backend());
    seed_runtime(rt);
    MoeLayer layer(rt, kPath);
    Tensor x = rt.activation({tokens_of(c), c.model.hidden_size}, "x");
    fill_uniform(x, 777, "x", 1.0);
    SaveContext root(kPath, &rt.save_log, true);
    layer.forward(root, x);
    std::set<std::string> keys;
    for (const auto& r : rt.save_log.records()) keys.insert(r.key());
    for (const char* k : {"router.input", "router.probs", "combine.topk_index", "combine.weights",
                          "combine.expert_output", "shared_experts.fc1.input", "shared_experts.act.input",
                          "shared_experts.fc2.input"})
      EXPECT_EQ(keys.count(std::string(kPath) + "." + k), 1u) << k;
    for (const char* k : {"fc1.input", "act.input", "dropout.mask", "fc2.input"}) {
      if (grouped) {
        EXPECT_EQ(keys.count(std::string(kPath) + ".experts." + k), 1u) << k;
      } else {
        int n = 0;
        for (int e = 0; e < c.model.num_moe_experts; ++e)
          n += static_cast<int>(keys.count(std::string(kPath) + ".experts." + std::to_string(e) + "." + k));
        EXPECT_GT(n, 0) << k;
        EXPECT_EQ(keys.count(std::string(kPath) + ".experts." + k), 0u) << k;
      }
    }
    root.clear();
  }
}

}  // namespace
}  // namespace rcts
