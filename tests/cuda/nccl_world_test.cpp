// NCCL with a world of one GPU (label cuda; run by scripts/gpu-check on a single lent
// GPU): the communicator moves device bytes exactly (all-gather, personalised exchange,
// broadcast, split), and a run whose process groups sit on it gives the CPU's bits.
// Multi-GPU behaviour needs mpirun over several GPUs (docs/gpu.md, "Multi-GPU runs").
// Skips with the reason without a device or without NCCL in the build.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "backends/cuda/cuda_backend.hpp"
#include "backends/registry.hpp"
#include "reference/driver/execute.hpp"
#include "reference/parallel/groups.hpp"

namespace rcts {
namespace {

struct NcclOfOne {
  std::unique_ptr<Backend> backend;
  SingleCommunicator host;
  std::unique_ptr<Communicator> world;
  std::string why;  // non-empty: skip

  NcclOfOne() {
    why = cuda::unavailable_reason();
    if (!why.empty()) return;
    backend = make_backend("cuda");
    try {
      world = backend->make_world(host);
    } catch (const Error& e) {
      why = e.what();
    }
  }
  std::byte* device(int64_t bytes) { return backend->memory().allocate(Domain::device, bytes); }
  void put(std::byte* d, const std::vector<uint8_t>& v) {
    backend->memory().copy(d, Domain::device, reinterpret_cast<const std::byte*>(v.data()), Domain::host,
                           static_cast<int64_t>(v.size()));
  }
  std::vector<uint8_t> get(const std::byte* d, size_t n) {
    std::vector<uint8_t> v(n);
    backend->memory().copy(reinterpret_cast<std::byte*>(v.data()), Domain::host, d, Domain::device,
                           static_cast<int64_t>(n));
    return v;
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(NcclWorldOfOne, MovesDeviceBytesExactly) {
  NcclOfOne n;
  if (!n.why.empty()) GTEST_SKIP() << n.why;
  ASSERT_EQ(n.world->size(), 1);
  EXPECT_EQ(n.world->backend(), "nccl");
  const size_t bytes = 1031;  // not a multiple of any vector width
  std::byte* a = n.device(bytes);
  std::byte* b = n.device(bytes);
  n.put(a, pattern(bytes, 7));
  n.put(b, pattern(bytes, 0));
  n.world->all_gather(a, b, static_cast<int64_t>(bytes));
  EXPECT_EQ(n.get(b, bytes), pattern(bytes, 7));

  n.put(b, pattern(bytes, 0));
  const int64_t count = static_cast<int64_t>(bytes);
  n.world->all_to_allv(a, &count, b, &count);
  EXPECT_EQ(n.get(b, bytes), pattern(bytes, 7));

  n.world->broadcast(a, count, 0);
  EXPECT_EQ(n.get(a, bytes), pattern(bytes, 7));
  const auto sub = n.world->split(0, 0);
  EXPECT_EQ(sub->size(), 1);
  n.backend->memory().deallocate(Domain::device, a, count);
  n.backend->memory().deallocate(Domain::device, b, count);
}

// Host copies (a RunRecord keeps its tensors on the host) with equal bytes.
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.bytes(), b.bytes(), static_cast<size_t>(a.nbytes())) == 0;
}

TEST(NcclWorldOfOne, ARunOnItsGroupsGivesTheCpuBits) {
  NcclOfOne n;
  if (!n.why.empty()) GTEST_SKIP() << n.why;
  Config cfg;
  cfg.model.num_layers = 2;
  cfg.run.micro_batches = 2;
  const ProcessGroups groups = make_groups(*n.world, make_layout(1, 1, 1, 1));
  const RunRecord gpu = execute(cfg, *n.backend, {}, &groups);
  const RunRecord cpu = execute(cfg, cpu::default_backend());
  ASSERT_EQ(gpu.losses.size(), cpu.losses.size());
  for (size_t i = 0; i < cpu.losses.size(); ++i) EXPECT_EQ(std::memcmp(&gpu.losses[i], &cpu.losses[i], sizeof(double)), 0);
  ASSERT_EQ(gpu.grads.size(), cpu.grads.size());
  for (size_t i = 0; i < cpu.grads.size(); ++i)
    EXPECT_TRUE(same_bits(gpu.grads[i].tensor, cpu.grads[i].tensor)) << cpu.grads[i].name;
  ASSERT_TRUE(gpu.device_pool_high_water);
  EXPECT_GE(*gpu.device_pool_high_water, gpu.device_peak);
}

}  // namespace
}  // namespace rcts
