// Workspace: held buffers are accounted as device `workspace` with their requested
// size, returned buffers are reused (no new heap allocation), capacity limits apply
// before anything changes, zeros() really zeroes a reused block.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>

#include "reference/core/error.hpp"
#include "reference/core/workspace.hpp"

namespace rcts {
namespace {

int64_t held(const MemoryTracker& m) { return m.category(Domain::device, Category::workspace).current; }

TEST(Workspace, HeldBytesAreAccountedAndReturned) {
  MemoryTracker m;
  Workspace ws(&m, Domain::device);
  {
    auto a = ws.take<float>(1000);
    EXPECT_EQ(held(m), 4000);
    auto b = ws.take<double>(10);
    EXPECT_EQ(held(m), 4080);
    EXPECT_EQ(m.domain(Domain::device).current, 4080);
  }
  EXPECT_EQ(held(m), 0);
  EXPECT_EQ(m.category(Domain::device, Category::workspace).peak, 4080);
  EXPECT_EQ(m.domain(Domain::host).current, 0);
}

TEST(Workspace, ReturnedBlocksAreReusedWithoutNewAllocations) {
  MemoryTracker m;
  Workspace ws(&m, Domain::device);
  float* first = nullptr;
  {
    auto a = ws.take<float>(5000);
    first = a.data();
  }
  EXPECT_EQ(ws.heap_allocations(), 1);
  for (int i = 0; i < 10; ++i) {
    auto a = ws.take<float>(5000);
    EXPECT_EQ(a.data(), first);
    auto small = ws.take<float>(3);  // the big block is held: a second block
    EXPECT_NE(small.data(), first);
  }
  EXPECT_EQ(ws.heap_allocations(), 2);
  EXPECT_GE(ws.reserved_bytes(), 5000 * 4 + 3 * 4);
  ws.trim();
  EXPECT_EQ(ws.reserved_bytes(), 0);
}

TEST(Workspace, BestFitKeepsTheLargeBlockForLargeRequests) {
  MemoryTracker m;
  Workspace ws(&m, Domain::device);
  {
    auto big = ws.take<float>(1 << 20);
    auto small = ws.take<float>(100);
  }
  const int64_t before = ws.heap_allocations();
  {
    auto small = ws.take<float>(100);     // takes the small block...
    auto big = ws.take<float>(1 << 20);   // ...so the big one is still there
  }
  EXPECT_EQ(ws.heap_allocations(), before);
}

TEST(Workspace, CapacityLimitThrowsBeforeAnythingChanges) {
  MemoryTracker m;
  m.set_capacity(Domain::device, 1000);
  Workspace ws(&m, Domain::device);
  EXPECT_THROW(ws.take<float>(1000), Error);
  EXPECT_EQ(held(m), 0);
  EXPECT_EQ(ws.heap_allocations(), 0);
  auto ok = ws.take<float>(250);
  EXPECT_EQ(held(m), 1000);
}

TEST(Workspace, ZerosClearsAReusedBlockAndMovesTransferOwnership) {
  MemoryTracker m;
  Workspace ws(&m, Domain::device);
  {
    auto a = ws.take<float>(64);
    for (auto& x : a) x = 7.0f;
  }
  auto z = ws.zeros<float>(64);
  for (float x : z) EXPECT_EQ(x, 0.0f);
  Workspace::Buffer<float> moved = std::move(z);
  EXPECT_EQ(z.size(), 0u);
  EXPECT_EQ(moved.size(), 64u);
  EXPECT_EQ(held(m), 256);
  moved = Workspace::Buffer<float>{};
  EXPECT_EQ(held(m), 0);
}

}  // namespace
}  // namespace rcts
