// Recompute must not change a single bit: for dropout 0.1, L = 5, several
// micro-batches, bf16 and f32 activations, every full and selective variant gives
// loss, outputs, input gradients and parameter gradients bitwise equal to the run
// without recompute, leaves every RNG stream where that run leaves it, and draws
// in recompute exactly the masks of the forward.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config base(DType act) {
  Config c = test_support::tiny_dense(5, 3);
  c.model.activation_dtype = act;
  c.run.steps = 2;
  c.run.seed = 1234;
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.bytes(), b.bytes(), static_cast<size_t>(a.nbytes())) == 0;
}

void expect_bitwise_equal(const RunRecord& want, const RunRecord& got, const std::string& what) {
  ASSERT_EQ(want.losses.size(), got.losses.size()) << what;
  for (size_t i = 0; i < want.losses.size(); ++i) {
    EXPECT_EQ(std::memcmp(&want.losses[i], &got.losses[i], sizeof(double)), 0) << what << " loss " << i;
    EXPECT_TRUE(same_bits(want.outputs[i], got.outputs[i])) << what << " output " << i;
    EXPECT_TRUE(same_bits(want.input_grads[i], got.input_grads[i])) << what << " input grad " << i;
    EXPECT_EQ(want.rng_after[i], got.rng_after[i]) << what << " RNG after micro-batch " << i << "\nwant "
                                                   << want.rng_after[i].to_string() << "\ngot  "
                                                   << got.rng_after[i].to_string();
  }
  ASSERT_EQ(want.grads.size(), got.grads.size());
  for (size_t i = 0; i < want.grads.size(); ++i) {
    EXPECT_TRUE(same_bits(want.grads[i].tensor, got.grads[i].tensor)) << what << " " << want.grads[i].name;
    EXPECT_TRUE(same_bits(want.params[i].tensor, got.params[i].tensor)) << what << " " << want.params[i].name;
  }
  EXPECT_EQ(want.side_effects, got.side_effects) << what;
}

// Every recompute draw equals the forward draw of the same site and micro-batch.
void expect_recompute_masks_match(const RunRecord& r, const std::string& what) {
  int recomputed = 0;
  for (const auto& m : r.masks) {
    if (!m.recompute) continue;
    ++recomputed;
    bool found = false;
    for (const auto& o : r.masks)
      if (!o.recompute && o.site == m.site && o.micro_batch == m.micro_batch && o.offset == m.offset &&
          o.seed == m.seed && o.digest == m.digest)
        found = true;
    EXPECT_TRUE(found) << what << ": recompute mask of " << m.site << " (mb " << m.micro_batch
                       << ") differs from its forward";
  }
  (void)recomputed;
}

struct Variant {
  std::string name;
  std::function<void(Config&)> apply;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (int n : {1, 2, 3, 5})
    v.push_back({"full_uniform_" + std::to_string(n), [n](Config& c) {
                   c.recompute.recompute_granularity = "full";
                   c.recompute.recompute_method = "uniform";
                   c.recompute.recompute_num_layers = n;
                 }});
  for (int n = 1; n <= 5; ++n)
    v.push_back({"full_block_" + std::to_string(n), [n](Config& c) {
                   c.recompute.recompute_granularity = "full";
                   c.recompute.recompute_method = "block";
                   c.recompute.recompute_num_layers = n;
                 }});
  const std::vector<std::vector<std::string>> sets = {
      {}, {"core_attn"}, {"mlp"}, {"layernorm"}, {"core_attn", "mlp"}, {"core_attn", "layernorm"},
      {"mlp", "layernorm"}, {"core_attn", "mlp", "layernorm"}};
  for (const auto& s : sets) {
    std::string name = "selective";
    for (const auto& m : s) name += "_" + m;
    v.push_back({name, [s](Config& c) {
                   c.recompute.recompute_granularity = "selective";
                   c.recompute.recompute_modules = s;
                 }});
  }
  return v;
}

class RecomputeEquivalence : public ::testing::TestWithParam<DType> {};

TEST_P(RecomputeEquivalence, EveryVariantIsBitwiseEqualToNoRecompute) {
  const RunRecord want = run_cpu(base(GetParam()));
  ASSERT_FALSE(want.masks.empty());
  for (const auto& v : variants()) {
    Config c = base(GetParam());
    v.apply(c);
    const RunRecord got = run_cpu(c);
    expect_bitwise_equal(want, got, v.name);
    expect_recompute_masks_match(got, v.name);
  }
}

INSTANTIATE_TEST_SUITE_P(ActivationDtypes, RecomputeEquivalence, ::testing::Values(DType::bf16, DType::f32),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(RecomputeCounters, RecomputedModulesRunTwiceOthersOnce) {
  Config c = base(DType::bf16);
  c.run.steps = 1;
  c.run.micro_batches = 2;
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn", "layernorm"};
  const RunRecord r = run_cpu(c);
  const int mb = 2;
  for (int l = 0; l < 5; ++l) {
    const std::string p = "layers." + std::to_string(l);
    EXPECT_EQ(r.counts.at(p + ".attention.core"), (ForwardCount{mb, mb}));
    EXPECT_EQ(r.counts.at(p + ".input_layernorm"), (ForwardCount{mb, mb}));
    EXPECT_EQ(r.counts.at(p + ".pre_mlp_layernorm"), (ForwardCount{mb, mb}));
    EXPECT_EQ(r.counts.at(p + ".mlp"), (ForwardCount{mb, 0}));
    EXPECT_EQ(r.counts.at(p), (ForwardCount{mb, 0}));
  }
}

TEST(RecomputeCounters, FullUniformRecomputesEveryLayerOnce) {
  Config c = base(DType::bf16);
  c.run.steps = 1;
  c.run.micro_batches = 1;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 2;
  const RunRecord r = run_cpu(c);
  for (int l = 0; l < 5; ++l) EXPECT_EQ(r.counts.at("layers." + std::to_string(l)), (ForwardCount{1, 1}));
}

TEST(RecomputeCounters, EvalNeverRecomputes) {
  for (const char* g : {"full", "selective"}) {
    Config c = base(DType::bf16);
    c.run.training = false;
    c.run.steps = 1;
    c.recompute.recompute_granularity = g;
    if (std::string(g) == "full") {
      c.recompute.recompute_method = "uniform";
      c.recompute.recompute_num_layers = 1;
    } else {
      c.recompute.recompute_modules = {"core_attn", "mlp", "layernorm"};
    }
    const RunRecord r = run_cpu(c);
    for (const auto& [path, count] : r.counts) EXPECT_EQ(count.recompute, 0) << g << " " << path;
    EXPECT_TRUE(r.masks.empty()) << "eval draws no dropout";
    for (const auto& bytes : r.saved_bytes_per_layer)
      for (auto b : bytes) EXPECT_EQ(b, 0) << "eval saves nothing";
  }
}

}  // namespace
}  // namespace rcts
