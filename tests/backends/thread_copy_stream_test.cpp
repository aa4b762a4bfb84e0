// The CPU backend's copy streams: strict streams run a copy only when waited for, in
// FIFO order; the link model runs them eagerly; errors reach wait(); an event can only
// be waited on through the stream that recorded it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "backends/cpu/thread_copy_stream.hpp"
#include "reference/core/error.hpp"

namespace rcts::cpu {
namespace {

TEST(CopyStream, StrictStreamRunsACopyOnlyWhenWaitedInFifoOrder) {
  ThreadCopyStream s("d2h", LinkModel{});
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
  ThreadCopyStream s("h2d", LinkModel{1e9, 1e-4});
  auto e = s.enqueue([] {}, 1000);
  for (int i = 0; i < 1000 && !e->done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(e->done()) << "with a link model the worker copies without being waited for";
}

TEST(CopyStream, ErrorsInsideACopyReachWait) {
  ThreadCopyStream s("d2h", LinkModel{});
  auto e = s.enqueue([] { throw Error("copy read a released storage"); }, 4);
  EXPECT_THROW(s.wait(e), Error);
}

TEST(CopyStream, AnEventIsWaitedOnThroughItsOwnStream) {
  ThreadCopyStream a("d2h", LinkModel{}), b("h2d", LinkModel{});
  auto e = a.enqueue([] {}, 1);
  EXPECT_THROW(b.wait(e), std::invalid_argument);
  a.wait(e);
  EXPECT_TRUE(e->done());
}

}  // namespace
}  // namespace rcts::cpu
