// With dimensions near INT32_MAX the memory model's byte and FLOP counts exceed
// int64: each is an rcts::Error naming the quantity, never a wrapped negative count.
#include <gtest/gtest.h>

#include <functional>

#include "reference/config/config.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "reference/memory_model/checked_math.hpp"
#include "reference/memory_model/checkpoint_math.hpp"
#include "reference/memory_model/report.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

constexpr int kI32Max = 2147483647;

Config config(int h, int a, int s, int b, int ffn) {
  return test_support::dense({.hidden = h, .heads = a, .seq = s, .micro_batch = b, .ffn = ffn});
}

// 2 * a*s^2*b = 2^63: the s^2 tensors' bytes wrapped to INT64_MIN.
Config s2_overflows() { return config(4096, 4096, 1 << 20, 1024, 4096); }
// h = s = ffn = 2^16, b = 2^10: one layer's forward is exactly 2^62 FLOPs (qkv 3*2^59,
// proj 2^59, scores + context 2^60, fc1 2^59, fc2 2^59); the 2 layers' 2^63 do not fit.
Config flops_overflow() { return config(65536, 1, 65536, 1024, 65536); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

TEST(CheckedMath, DetectsOverflow) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(error_of([] { checked_mul(int64_t{1} << 62, 2, "s*b*h"); }),
            "memory model: s*b*h = 4611686018427387904 * 2 overflows int64: the dimensions are too large to count");
  EXPECT_NE(error_of([] { checked_add(INT64_MAX, 1, "layer bytes"); }).find("layer bytes"), std::string::npos);
  EXPECT_NE(error_of([] { checked_product({kI32Max, kI32Max, kI32Max}, "s*b*h"); }).find("s*b*h"), std::string::npos);
}

TEST(MemoryModelOverflow, SavedBytesNeverWrap) {
  const MemoryDims m = MemoryDims::from(s2_overflows());
  EXPECT_NE(error_of([&] { layer_memory(m); }).find("bytes of attention.softmax.output"), std::string::npos);
  EXPECT_NE(error_of([&] { stage_memory(s2_overflows()); }).find("overflows int64"), std::string::npos);
  const MemoryDims huge = MemoryDims::from(config(kI32Max, 1, kI32Max, kI32Max, kI32Max));
  EXPECT_NE(error_of([&] { huge.sbh(); }).find("s*b*h"), std::string::npos);
  EXPECT_NE(error_of([&] { chunk_input_memory(huge, false); }).find("overflows int64"), std::string::npos);
}

TEST(MemoryModelOverflow, FlopsNeverWrap) {
  const MemoryDims m = MemoryDims::from(flops_overflow());
  EXPECT_GT(layer_memory(m).total(), 0);  // the bytes still fit
  EXPECT_EQ(layer_flops(m).total(), int64_t{1} << 62);
  EXPECT_NE(error_of([&] { recompute_overhead(flops_overflow()); }).find("stage forward FLOPs = "), std::string::npos);
  // h = 2^18: qkv alone is 6 * 2^62.
  const MemoryDims wide = MemoryDims::from(config(1 << 18, 1, 65536, 1024, 65536));
  EXPECT_NE(error_of([&] { layer_flops(wide); }).find("qkv FLOPs = "), std::string::npos);
  EXPECT_NE(error_of([] { checkpoint_peak(2, 2, INT64_MAX / 2, INT64_MAX / 2); }).find("overflows int64"),
            std::string::npos);
}

TEST(MemoryModelOverflow, TheReportIsAnErrorNotNegativeBytes) {
  for (const Config& c : {s2_overflows(), flops_overflow()}) {
    EXPECT_NE(error_of([&] { memory_report_text(c); }).find("overflows int64"), std::string::npos);
    EXPECT_NE(error_of([&] { memory_report_json(c); }).find("overflows int64"), std::string::npos);
  }
}

}  // namespace
}  // namespace rcts
