// Checkpoint-segment optimum k* and recompute FLOP overhead.
#include <gtest/gtest.h>

#include <cmath>

#include "reference/config/config_error.hpp"
#include "reference/memory_model/checkpoint_math.hpp"

namespace rcts {
namespace {

MemoryDims dims(int64_t s, int64_t b, int64_t h, int64_t a) {
  MemoryDims m;
  m.s = s;
  m.b = b;
  m.h = h;
  m.a = a;
  m.ffn = 4 * h;
  return m;
}

TEST(CheckpointOptimum, IntegerOptimumOnTheFormula) {
  // A = 8c, L = 32: k* = sqrt(32·8) = 16, peak(16) = 16c + 2·8c = 32c = 2·sqrt(L·A·c).
  const CheckpointOptimum o = checkpoint_optimum(32, 8000, 1000);
  EXPECT_DOUBLE_EQ(o.k_star, 16.0);
  EXPECT_DOUBLE_EQ(o.peak_at_k_star, 32000.0);
  EXPECT_EQ(o.k_best, 16);
  EXPECT_EQ(o.layers_per_segment, 2);
  EXPECT_EQ(o.peak_best, 32000);
  EXPECT_EQ(checkpoint_peak(32, 15, 8000, 1000), 39000);  // 15c + ceil(32/15)=3 · 8c
  EXPECT_EQ(checkpoint_peak(32, 17, 8000, 1000), 33000);
  EXPECT_EQ(checkpoint_peak(32, 32, 8000, 1000), 40000);
  EXPECT_EQ(checkpoint_peak(32, 1, 8000, 1000), 1000 + 32 * 8000);
}

TEST(CheckpointOptimum, NonIntegerKStar) {
  // L = 10, A = 3, c = 1: k* = sqrt(30) ≈ 5.477; peak(5) = 5 + 2·3 = 11 beats
  // peak(6) = 6 + 2·3 = 12 and peak(4) = 4 + 3·3 = 13.
  const CheckpointOptimum o = checkpoint_optimum(10, 3, 1);
  EXPECT_NEAR(o.k_star, std::sqrt(30.0), 1e-12);
  EXPECT_EQ(o.k_best, 5);
  EXPECT_EQ(o.peak_best, 11);
  EXPECT_EQ(o.layers_per_segment, 2);
  EXPECT_THROW(checkpoint_optimum(10, 3, 0), Error);
  EXPECT_THROW(checkpoint_peak(10, 11, 3, 1), Error);
}

TEST(RecomputeFlops, LayerForwardIs24bsh2Plus4bs2h) {
  for (auto [s, b, h, a] : std::vector<std::array<int64_t, 4>>{{16, 2, 64, 4}, {4096, 2, 4096, 32}, {2048, 1, 12288, 96}}) {
    const LayerFlops f = layer_flops(dims(s, b, h, a));
    EXPECT_EQ(f.total(), 24 * b * s * h * h + 4 * b * s * s * h);
    EXPECT_EQ(f.core_attn(), 4 * b * s * s * h);
  }
}

TEST(RecomputeFlops, SwigluCountsTheDoubleWidthFc1) {
  MemoryDims m = dims(16, 2, 96, 4);
  m.ffn = 256;
  m.swiglu = true;
  const int64_t sbh = 16 * 2 * 96;
  EXPECT_EQ(layer_flops(m).total(), 8 * sbh * 96 + 6 * sbh * 256 + 4 * 2 * 16 * 16 * 96);
}

TEST(RecomputeFlops, FullIsOneExtraForward) {
  const RecomputeOverhead o = recompute_overhead(dims(4096, 2, 4096, 32), 32, 32, {});
  EXPECT_DOUBLE_EQ(o.recompute_ratio, 1.0);
  EXPECT_DOUBLE_EQ(o.step_ratio, 4.0 / 3.0);
  const RecomputeOverhead block = recompute_overhead(dims(4096, 2, 4096, 32), 32, 8, {});
  EXPECT_DOUBLE_EQ(block.recompute_ratio, 0.25);
}

TEST(RecomputeFlops, SelectiveCoreAttnIsAboutSOver6h) {
  // Exact: 4bs²h / (24bsh² + 4bs²h) = s/(6h + s); s = h gives 1/7.
  EXPECT_DOUBLE_EQ(recompute_overhead(dims(64, 1, 64, 4), 2, 0, {"core_attn"}).recompute_ratio, 1.0 / 7.0);
  // s << h: close to the paper's s/(6h).
  const double r = recompute_overhead(dims(64, 1, 4096, 32), 2, 0, {"core_attn"}).recompute_ratio;
  EXPECT_NEAR(r / (64.0 / (6.0 * 4096.0)), 1.0, 0.005);
  // layernorm recomputes no matmul; mlp recomputes fc1 + fc2.
  EXPECT_EQ(recompute_overhead(dims(64, 1, 64, 4), 2, 0, {"layernorm"}).recompute_flops, 0);
  const LayerFlops f = layer_flops(dims(64, 1, 64, 4));
  EXPECT_EQ(recompute_overhead(dims(64, 1, 64, 4), 2, 0, {"mlp"}).recompute_flops, 2 * f.mlp());
}

TEST(RecomputeFlops, FromConfig) {
  Config c;
  c.model.num_layers = 4;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 1;
  EXPECT_DOUBLE_EQ(recompute_overhead(c).recompute_ratio, 0.25);
  c.recompute.recompute_method = "uniform";
  EXPECT_DOUBLE_EQ(recompute_overhead(c).recompute_ratio, 1.0);
  Config none;
  EXPECT_EQ(recompute_overhead(none).recompute_flops, 0);
  EXPECT_DOUBLE_EQ(recompute_overhead(none).step_ratio, 1.0);
}

// Under pipeline parallelism a rank recomputes its own stage's layers (design §16):
// 4 layers over 2 stages, full uniform 1 recomputes 2 layers' forward on each rank.
TEST(RecomputeFlops, CountsTheStagesLayersUnderPipelineParallelism) {
  Config c;
  c.model.num_layers = 4;
  c.parallel.pipeline_model_parallel_size = 2;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 1;
  const int64_t layer = layer_flops(MemoryDims::from(c)).total();
  EXPECT_EQ(recompute_overhead(c).forward_flops, 2 * layer);
  EXPECT_EQ(recompute_overhead(c).recompute_flops, 2 * layer);
  c.recompute.recompute_method = "block";
  EXPECT_EQ(recompute_overhead(c).recompute_flops, layer);
}

}  // namespace
}  // namespace rcts
