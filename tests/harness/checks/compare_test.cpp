// Bitwise comparison: first index, hex values, ulp distances, counts, worst element.
#include "harness/checks/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

using testing::tensor_of;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(BitwiseDiff, EqualTensors) {
  const Tensor a = tensor_of<float>({2, 2}, {1, 2, 3, 4}, "x");
  const Tensor b = tensor_of<float>({2, 2}, {1, 2, 3, 4}, "x");
  const BitwiseDiff d = compare_bitwise(a, b);
  EXPECT_TRUE(d.equal);
  EXPECT_EQ(d.differing, 0);
  EXPECT_EQ(d.first_index, -1);
  EXPECT_TRUE(contains(d.message(), "bitwise equal")) << d.message();
}

TEST(BitwiseDiff, OneUlpInF32) {
  const float one = 1.0f, next = std::nextafter(1.0f, 2.0f);
  const Tensor e = tensor_of<float>({2, 3, 4}, std::vector<float>(24, one), "fc1.out");
  std::vector<float> v(24, one);
  v[1 * 12 + 0 * 4 + 3] = next;  // index [1, 0, 3], flat 15
  v[20] = 3.0f;
  const Tensor a = tensor_of<float>({2, 3, 4}, v, "fc1.out.recomputed");

  const BitwiseDiff d = compare_bitwise(e, a);
  EXPECT_FALSE(d.equal);
  EXPECT_EQ(d.numel, 24);
  EXPECT_EQ(d.differing, 2);
  EXPECT_EQ(d.first_index, 15);
  EXPECT_EQ(d.first_index_nd, "[1, 0, 3]");
  EXPECT_EQ(d.expected_hex, "0x3f800000");
  EXPECT_EQ(d.actual_hex, "0x3f800001");
  EXPECT_EQ(d.expected_value, 1.0);
  EXPECT_EQ(d.actual_value, static_cast<double>(next));
  EXPECT_EQ(d.ulp_distance, 1u);
  // 3.0f = 0x40400000; 1.0f = 0x3f800000: 0xc00000 steps apart.
  EXPECT_EQ(d.worst_index, 20);
  EXPECT_EQ(d.worst_index_nd, "[1, 2, 0]");
  EXPECT_EQ(d.worst_ulp, 0xc00000u);

  const std::string m = d.message();
  EXPECT_TRUE(contains(m, "'fc1.out'")) << m;
  EXPECT_TRUE(contains(m, "2 of 24 f32 elements differ")) << m;
  EXPECT_TRUE(contains(m, "[1, 0, 3]")) << m;
  EXPECT_TRUE(contains(m, "0x3f800000 (1)")) << m;
  EXPECT_TRUE(contains(m, "0x3f800001 (1.00000012)")) << m;
  EXPECT_TRUE(contains(m, "ulp 1")) << m;
  EXPECT_TRUE(contains(m, "worst at [1, 2, 0]")) << m;
}

TEST(BitwiseDiff, F64DecimalHas17Digits) {
  const Tensor e = tensor_of<double>({1}, {0.1}, "d");
  const Tensor a = tensor_of<double>({1}, {std::nextafter(0.1, 1.0)}, "d");
  const BitwiseDiff d = compare_bitwise(e, a);
  EXPECT_EQ(d.ulp_distance, 1u);
  EXPECT_EQ(d.expected_hex, "0x3fb999999999999a");
  EXPECT_TRUE(contains(d.message(), "(0.10000000000000001)")) << d.message();
  EXPECT_TRUE(contains(d.message(), "(0.10000000000000002)")) << d.message();
}

TEST(BitwiseDiff, SignedZeroAndAcrossZero) {
  EXPECT_EQ(ulp_distance(DType::f32, 0x00000000u, 0x80000000u), 1u);  // +0, -0
  EXPECT_EQ(ulp_distance(DType::f32, 0x00000001u, 0x80000001u), 3u);  // +denorm, -denorm
  EXPECT_EQ(ulp_distance(DType::f32, 0x7f7fffffu, 0x7f800000u), 1u);  // max finite, inf
  EXPECT_EQ(ulp_distance(DType::bf16, 0x3f80u, 0x3f81u), 1u);
  EXPECT_EQ(ulp_distance(DType::bf16, 0x3f80u, 0xbf80u), 0x7f01u);  // 1.0, -1.0
}

TEST(BitwiseDiff, NaNIsWorst) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor e = tensor_of<float>({3}, {1.0f, 2.0f, 3.0f}, "y");
  const Tensor a = tensor_of<float>({3}, {1.5f, nan, 3.0f}, "y");
  const BitwiseDiff d = compare_bitwise(e, a);
  EXPECT_EQ(d.differing, 2);
  EXPECT_EQ(d.first_index, 0);
  EXPECT_EQ(d.worst_index, 1);
  EXPECT_EQ(d.worst_ulp, std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(contains(d.message(), "NaN involved")) << d.message();
  // Two NaNs with different payloads differ bitwise too.
  EXPECT_EQ(ulp_distance(DType::f32, 0x7fc00000u, 0x7fc00001u), std::numeric_limits<uint64_t>::max());
}

TEST(BitwiseDiff, Bf16) {
  const Tensor e = tensor_of<bf16>({2}, {bf16{0x3f80}, bf16{0x4000}}, "h");
  const Tensor a = tensor_of<bf16>({2}, {bf16{0x3f80}, bf16{0x4001}}, "h");
  const BitwiseDiff d = compare_bitwise(e, a);
  EXPECT_EQ(d.first_index, 1);
  EXPECT_EQ(d.expected_hex, "0x4000");
  EXPECT_EQ(d.actual_hex, "0x4001");
  EXPECT_EQ(d.expected_value, 2.0);
  EXPECT_EQ(d.actual_value, 2.015625);
  EXPECT_EQ(d.ulp_distance, 1u);
}

TEST(BitwiseDiff, IntegerTypes) {
  const BitwiseDiff u = compare_bitwise(tensor_of<uint8_t>({4}, {0, 1, 1, 0}, "mask"),
                                        tensor_of<uint8_t>({4}, {0, 1, 0, 1}, "mask"));
  EXPECT_EQ(u.differing, 2);
  EXPECT_EQ(u.first_index, 2);
  EXPECT_EQ(u.expected_hex, "0x01");
  EXPECT_EQ(u.ulp_distance, 1u);

  const BitwiseDiff i = compare_bitwise(tensor_of<int32_t>({2}, {5, -3}, "i"), tensor_of<int32_t>({2}, {5, 4}, "i"));
  EXPECT_EQ(i.expected_hex, "0xfffffffd");
  EXPECT_EQ(i.expected_value, -3.0);
  EXPECT_EQ(i.ulp_distance, 7u);
  EXPECT_TRUE(contains(i.message(), "0xfffffffd (-3)")) << i.message();

  const int64_t big = int64_t{1} << 60;
  const BitwiseDiff l = compare_bitwise(tensor_of<int64_t>({1}, {big + 1}, "l"), tensor_of<int64_t>({1}, {-big}, "l"));
  EXPECT_EQ(l.ulp_distance, uint64_t{2} * static_cast<uint64_t>(big) + 1);
  EXPECT_TRUE(contains(l.message(), "(1152921504606846977)")) << l.message();
}

TEST(BitwiseDiff, ShapeOrDtypeMismatchIsAResult) {
  const BitwiseDiff s = compare_bitwise(tensor_of<float>({2, 2}, {1, 2, 3, 4}, "p"),
                                        tensor_of<float>({4}, {1, 2, 3, 4}, "p"));
  EXPECT_FALSE(s.equal);
  EXPECT_TRUE(contains(s.message(), "expected f32 [2, 2], actual f32 [4]")) << s.message();
  const BitwiseDiff t = compare_bitwise(tensor_of<float>({1}, {1}, "p"), tensor_of<int32_t>({1}, {1}, "p"));
  EXPECT_FALSE(t.equal);
  EXPECT_TRUE(contains(t.message(), "shape/dtype mismatch")) << t.message();
}

TEST(BitwiseDiff, ManyMismatchesAreCappedInTheReport) {
  std::vector<float> e(100, 0.0f), a(100, 1.0f);
  const BitwiseDiff d = compare_bitwise(tensor_of<float>({100}, e, "z"), tensor_of<float>({100}, a, "z"));
  EXPECT_EQ(d.differing, 100);
  EXPECT_EQ(d.first_mismatches.size(), BitwiseDiff::kShownMismatches);
  EXPECT_TRUE(contains(d.message(), "... 92 more")) << d.message();
}

TEST(BitwiseDiff, ComparesViewsAtTheirOffset) {
  const Tensor e = tensor_of<float>({4, 2}, {0, 0, 1, 1, 2, 2, 3, 3}, "rows");
  const Tensor a = tensor_of<float>({2, 2}, {2, 2, 3, 9}, "rows.part");
  const BitwiseDiff d = compare_bitwise(e.rows(2, 4), a);
  EXPECT_EQ(d.differing, 1);
  EXPECT_EQ(d.first_index_nd, "[1, 1]");
}

}  // namespace
}  // namespace rcts::harness
