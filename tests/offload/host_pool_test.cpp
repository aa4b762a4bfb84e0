// The pinned host pool of offload: buffers are reused by (shape, dtype).
#include <gtest/gtest.h>

#include "reference/core/error.hpp"
#include "reference/offload/host_pool.hpp"

namespace rcts {
namespace {

TEST(HostPool, ReusesBuffersByShapeAndDtype) {
  MemoryTracker m;
  HostPool pool(m, host_memory());
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
