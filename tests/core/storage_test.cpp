// Storage, Tensor and MemoryTracker: accounting, release/adopt, views, checked reads.
#include <gtest/gtest.h>

#include <cstring>

#include "reference/core/tensor.hpp"

namespace rcts {
namespace {

Placement dev(MemoryTracker& m, Category c = Category::activation) { return {&m, Domain::device, c}; }

TEST(MemoryTracker, CountsAllocationsPerDomainAndCategory) {
  MemoryTracker m;
  {
    Tensor a = Tensor::empty({4, 8}, DType::f32, dev(m), "a");
    Tensor b = Tensor::empty({16}, DType::bf16, {&m, Domain::host_pinned, Category::offload_buffer}, "b");
    EXPECT_EQ(m.domain(Domain::device).current, 128);
    EXPECT_EQ(m.category(Domain::device, Category::activation).current, 128);
    EXPECT_EQ(m.domain(Domain::host_pinned).current, 32);
    EXPECT_EQ(m.category(Domain::host_pinned, Category::offload_buffer).current, 32);
  }
  EXPECT_EQ(m.domain(Domain::device).current, 0);
  EXPECT_EQ(m.domain(Domain::device).peak, 128);
  m.reset_peaks();
  EXPECT_EQ(m.domain(Domain::device).peak, 0);
}

TEST(MemoryTracker, RetagMovesBytesBetweenCategories) {
  MemoryTracker m;
  Tensor a = Tensor::empty({10}, DType::f32, dev(m), "a");
  a.storage()->retag(Category::saved_activation);
  EXPECT_EQ(m.category(Domain::device, Category::activation).current, 0);
  EXPECT_EQ(m.category(Domain::device, Category::saved_activation).current, 40);
  EXPECT_EQ(m.domain(Domain::device).current, 40);
}

TEST(MemoryTracker, ASetPeaksAtTheMaximumOfItsSum) {
  MemoryTracker m;
  const CategorySet held{Category::saved_activation, Category::checkpoint_input};
  Tensor a = Tensor::empty({10}, DType::f32, dev(m, Category::checkpoint_input), "a");  // 40
  {
    a.storage()->retag(Category::saved_activation);  // moves inside the set: no new bytes
    Tensor b = Tensor::empty({5}, DType::f32, dev(m, Category::saved_activation), "b");  // 20
    Tensor c = Tensor::empty({100}, DType::f32, dev(m), "c");  // not in the set
    EXPECT_EQ(m.categories(Domain::device, held).current, 60);
  }
  EXPECT_EQ(m.categories(Domain::device, held).current, 40);
  // The categories' own peaks (40 + 60) add up to more than was ever held at once.
  EXPECT_EQ(m.category(Domain::device, Category::checkpoint_input).peak, 40);
  EXPECT_EQ(m.category(Domain::device, Category::saved_activation).peak, 60);
  EXPECT_EQ(m.categories(Domain::device, held).peak, 60);
  EXPECT_EQ(m.categories(Domain::device, held).allocations, 2);
  // A re-tag out of the set leaves it; a one-category set is that category.
  a.storage()->retag(Category::activation);
  EXPECT_EQ(m.categories(Domain::device, held).current, 0);
  EXPECT_EQ(m.categories(Domain::device, {Category::activation}).current, 40);
  EXPECT_EQ(m.categories(Domain::device, {Category::activation}).peak,
            m.category(Domain::device, Category::activation).peak);
  m.reset_peaks();
  EXPECT_EQ(m.categories(Domain::device, held).peak, 0);
  EXPECT_EQ(m.categories(Domain::device, {Category::activation}).peak, 40);
}

TEST(MemoryTracker, CapacityLimitThrowsNamingTheRequest) {
  MemoryTracker m;
  m.set_capacity(Domain::device, 100);
  Tensor a = Tensor::empty({20}, DType::f32, dev(m), "a");
  try {
    Tensor b = Tensor::empty({10}, DType::f32, dev(m), "b");
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory in domain 'device'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("40 bytes"), std::string::npos) << e.what();
  }
}

TEST(Storage, ReleasePoisonsFreesAndKeepsTheObject) {
  MemoryTracker m;
  Tensor a = Tensor::empty({8}, DType::f32, dev(m), "layers.0.ln.output");
  Tensor v = a.view({2, 4}, "layers.0.qkv.input");
  a.data<float>()[0] = 1.0f;
  a.storage()->release();
  EXPECT_TRUE(v.released());
  EXPECT_EQ(m.domain(Domain::device).current, 0);
  try {
    (void)v.data<float>();
    FAIL() << "reading a released storage must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'layers.0.qkv.input'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("released"), std::string::npos) << e.what();
  }
}

TEST(Storage, AdoptReattachesBytesForEveryView) {
  MemoryTracker m;
  Tensor a = Tensor::empty({4}, DType::f32, dev(m, Category::saved_activation), "out");
  Tensor view = a.view({2, 2}, "consumer.input");
  a.storage()->release();
  Tensor fresh = Tensor::empty({4}, DType::f32, dev(m), "recomputed");
  for (int i = 0; i < 4; ++i) fresh.data<float>()[i] = static_cast<float>(i) + 0.5f;
  const float* bytes_before = fresh.data<float>();
  a.storage()->adopt(*fresh.storage());
  EXPECT_FALSE(view.released());
  EXPECT_EQ(view.data<float>(), bytes_before) << "adopt must not copy";
  EXPECT_EQ(view.data<float>()[3], 3.5f);
  EXPECT_TRUE(fresh.released());
  // Accounted once, under the adopting storage's category.
  EXPECT_EQ(m.domain(Domain::device).current, 16);
  EXPECT_EQ(m.category(Domain::device, Category::saved_activation).current, 16);
  EXPECT_EQ(m.category(Domain::device, Category::activation).current, 0);
}

TEST(Storage, AdoptRejectsSizeMismatch) {
  MemoryTracker m;
  Tensor a = Tensor::empty({4}, DType::f32, dev(m), "a");
  Tensor b = Tensor::empty({5}, DType::f32, dev(m), "b");
  EXPECT_THROW(a.storage()->adopt(*b.storage()), Error);
}

TEST(Tensor, ViewsAndRowsShareStorage) {
  MemoryTracker m;
  Tensor a = Tensor::empty({3, 2}, DType::f32, dev(m), "a");
  Tensor r = a.rows(1, 3);
  r.data<float>()[0] = 7.0f;
  EXPECT_EQ(a.data<float>()[2], 7.0f);
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_THROW(a.view({4}), Error);
  EXPECT_THROW(a.rows(2, 4), Error);
}

TEST(Tensor, TypedAccessChecksDtype) {
  MemoryTracker m;
  Tensor a = Tensor::empty({2}, DType::bf16, dev(m), "a");
  EXPECT_THROW((void)a.data<float>(), Error);
  EXPECT_NO_THROW((void)a.data<bf16>());
}

TEST(Tensor, LoadStoreRoundsToBf16NearestEven) {
  MemoryTracker m;
  Tensor a = Tensor::empty({3}, DType::bf16, dev(m), "a");
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even mantissa wins (1).
  // 1 + 3*2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even wins (1 + 2^-6).
  const float in[3] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.5f};
  store(a, in);
  auto out = to_vector<float>(a);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f + 0x1p-6f);
  EXPECT_EQ(out[2], -2.5f);
}

TEST(DType, ParseNamesAndRejectsUnknown) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(dtype_size(parse_dtype("f64")), 8u);
  try {
    parse_dtype("fp16");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp16'"), std::string::npos);
  }
}

}  // namespace
}  // namespace rcts
