// regen-golden's one-line review: counts, grouping by module with layer indices
// folded, and the loss difference in absolute terms and in ulp (expected values worked
// out here from the float format, not taken from the code).
#include "harness/golden/golden_review.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace rcts::harness {
namespace {

uint64_t bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

TensorDigest digest(const std::string& name, const std::string& sha) {
  TensorDigest t;
  t.name = name;
  t.shape = {4};
  t.dtype = "f32";
  t.sha256 = sha;
  t.numel = 4;
  return t;
}

TEST(TensorGroup, FoldsIndicesAndDropsParameterSuffixes) {
  EXPECT_EQ(tensor_group("layers.3.mlp.fc1.weight.grad"), "layers.*.mlp.fc1");
  EXPECT_EQ(tensor_group("layers.12.input_layernorm.bias"), "layers.*.input_layernorm");
  EXPECT_EQ(tensor_group("output.step1.mb2"), "output");
  EXPECT_EQ(tensor_group("input_grad.step0.mb0"), "input_grad");
  EXPECT_EQ(tensor_group("rank1/layers.0.moe.experts.3.fc2.weight.grad"), "rank*/layers.*.moe.experts.*.fc2");
}

TEST(LossUlp, CountsInFloatForWidenedFloatsElseInDouble) {
  std::string unit;
  const float q = 0.25f;
  EXPECT_EQ(loss_ulp(bits(q), bits(std::nextafter(q, 1.0f)), unit), 1u);
  EXPECT_EQ(unit, "f32");
  EXPECT_EQ(loss_ulp(bits(-1.0), bits(1.0), unit), 2u * 0x3f800000u);  // both sides of zero
  EXPECT_EQ(unit, "f32");
  EXPECT_EQ(loss_ulp(bits(0.1), bits(std::nextafter(std::nextafter(0.1, 1.0), 1.0)), unit), 2u);
  EXPECT_EQ(unit, "f64");
}

TEST(GoldenReview, OneLineWithCountsGroupsAndDifferences) {
  Golden before, after;
  before.losses = {double_hex_bits(0.5), double_hex_bits(0.25)};
  after.losses = {double_hex_bits(0.5), double_hex_bits(std::nextafter(0.25f, 1.0f))};
  before.side_effects = after.side_effects = SideEffectBits{{"layers.0.tokens_seen", double_hex_bits(96)}};
  before.tensors = {digest("layers.0.attention.qkv.weight", "aa"), digest("layers.0.mlp.fc1.weight.grad", "bb"),
                    digest("layers.1.mlp.fc1.weight.grad", "cc")};
  after.tensors = before.tensors;
  after.tensors[1].sha256 = "dd";
  after.tensors[2].sha256 = "ee";
  after.tensors[2].stats.l2 = 0.5;
  // 0.25 has exponent -2: one float ulp there is 2^-25 = 2.98e-08.
  EXPECT_EQ(golden_review(before, after),
            "losses 1 of 2 (max |d| 2.98e-08, 1 ulp f32); side effects 0 of 1; tensors 2 of 3: layers.*.mlp.fc1 2 of 2 "
            "(summary stats |d| <= 0.5)");
  EXPECT_EQ(golden_review(before, before), "no change");
}

TEST(GoldenReview, RemovedAndNewTensorsCount) {
  Golden before, after;
  before.tensors = {digest("output.step0.mb0", "aa"), digest("layers.0.mlp.fc2.bias", "bb")};
  after.tensors = {digest("output.step0.mb0", "aa"), digest("layers.0.mlp.fc2.weight", "cc")};
  EXPECT_EQ(golden_review(before, after),
            "losses 0 of 0; side effects 0 of 0; tensors 2 of 3: layers.*.mlp.fc2 2 of 2 (summary stats |d| <= 0); 1 removed");
}

}  // namespace
}  // namespace rcts::harness
