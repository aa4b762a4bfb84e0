// Copy streams and the host pool: strict streams complete a copy only when it is
// waited for (FIFO), a link model runs copies asynchronously, errors reach wait().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "reference/offload/copy_stream.hpp"
#include "reference/offload/host_pool.hpp"
#include "reference/core/error.hpp"

namespace rcts {
namespace {

TEST(CopyStream, StrictStreamRunsACopyOnlyWhenWaitedInFifoOrder) {
  CopyStream s("d2h", LinkModel{});
  std::atomic<int> order{0};
  int first = -1, second = -1;
  auto e1 = s.enqueue([&] { first = order++; }, 8);
  auto e2 = s.enqueue([&] { second = order++; }, 8);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(e1->done()) << "a strict stream must not complete a copy nobody waited for";
  EXPECT_FALSE(e2->done());
  s.wait(e2);  // waiting for the later copy runs the earlier one first
  EXPECT_TRUE(e1->done());
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  EXPECT_EQ(s.bytes_copied(), 16);
}

TEST(CopyStream, LinkModelRunsCopiesAsynchronously) {
  CopyStream s("h2d", LinkModel{1e9, 1e-4});
  auto e = s.enqueue([] {}, 1000);
  for (int i = 0; i < 1000 && !e->done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(e->done()) << "with a link model the worker copies without being waited for";
}

TEST(CopyStream, ErrorsInsideACopyReachWait) {
  CopyStream s("d2h", LinkModel{});
  auto e = s.enqueue([] { throw Error("copy read a released storage"); }, 4);
  EXPECT_THROW(s.wait(e), Error);
}

TEST(HostPool, ReusesBuffersByShapeAndDtype) {
  MemoryTracker m;
  HostPool pool(m);
  Tensor a = pool.acquire({64}, DType::u8, "a");
  EXPECT_EQ(m.category(Domain::host_pinned, Category::offload_buffer).current, 64);
  pool.release(a);
  Tensor b = pool.acquire({64}, DType::u8, "b");
  EXPECT_EQ(b.storage(), a.storage()) << "a released buffer of the same key is reused";
  Tensor c = pool.acquire({32}, DType::u8, "c");
  EXPECT_NE(c.storage(), a.storage());
  EXPECT_EQ(pool.allocations(), 2);
}

}  // namespace
}  // namespace rcts
