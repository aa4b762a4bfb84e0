// The dispatch and ETP plans exchange host vectors (row counts). With one rank the
// communicator is a SingleCommunicator over the backend's memory, whose byte
// collectives copy device bytes in stream order: such a copy may still be in flight when
// it returns (CUDA: cudaMemcpyAsync). DeferredCopyMemory makes that certain on the host
// (device-to-device copies run only at the next copy that touches host memory, as a
// stream does before it syncs), so a plan that sent its counts as device bytes reads
// zeros instead of passing because the copy happened to finish in time.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "reference/core/memory_resource.hpp"
#include "reference/modules/moe_dispatch.hpp"

namespace rcts {
namespace {

class DeferredCopyMemory final : public MemoryResource {
 public:
  std::string name() const override { return "deferred copies"; }
  std::byte* allocate(Domain d, int64_t bytes) override { return host_memory().allocate(d, bytes); }
  void deallocate(Domain d, std::byte* p, int64_t bytes) noexcept override {
    host_memory().deallocate(d, p, bytes);
  }
  void fill(Domain d, std::byte* p, uint8_t value, int64_t bytes) override {
    if (d != Domain::device) run_pending();
    std::memset(p, value, static_cast<size_t>(bytes));
  }
  void copy(std::byte* dst, Domain dd, const std::byte* src, Domain sd, int64_t bytes) override {
    if (dd == Domain::device && sd == Domain::device) {
      pending_.push_back([=] { std::memmove(dst, src, static_cast<size_t>(bytes)); });
      return;
    }
    run_pending();
    std::memmove(dst, src, static_cast<size_t>(bytes));
  }
  bool host_accessible(Domain d) const override { return d != Domain::device; }
  size_t pending() const { return pending_.size(); }
  void drop_pending() { pending_.clear(); }

 private:
  void run_pending() {
    for (auto& f : pending_) f();
    pending_.clear();
  }
  std::vector<std::function<void()>> pending_;
};

TEST(HostCollectives, TheDispatchPlanReadsCountsThatArrived) {
  DeferredCopyMemory memory;
  SingleCommunicator ep(&memory);
  // 4 tokens, top-2 over 4 experts.
  const std::vector<int32_t> sel = {2, 0, 1, 2, 3, 2, 0, 1};
  Tensor topk = Tensor::empty({4, 2}, DType::i32, host_placement(), "topk");
  std::memcpy(topk.data<int32_t>(), sel.data(), sel.size() * sizeof(int32_t));
  const DispatchPlan p = make_dispatch_plan(ep, topk, 4, "test");
  EXPECT_EQ(memory.pending(), 0u) << "the plan left a copy of its counts in flight";
  memory.drop_pending();  // never write into the plan's vectors later
  EXPECT_EQ(p.recv_counts, (std::vector<int64_t>{2, 2, 3, 1}));
  EXPECT_EQ(p.expert_counts, (std::vector<int64_t>{2, 2, 3, 1}));
  EXPECT_EQ(p.recv_rows, (std::vector<int64_t>{8}));
  EXPECT_EQ(p.received(), 8);
}

TEST(HostCollectives, TheEtpPlanGathersCountsThatArrived) {
  DeferredCopyMemory memory;
  SingleCommunicator etp(&memory);
  const EtpPlan p = make_etp_plan(etp, {3, 0, 5});
  EXPECT_EQ(memory.pending(), 0u) << "the plan left a copy of its counts in flight";
  memory.drop_pending();
  EXPECT_EQ(p.counts, (std::vector<int64_t>{3, 0, 5}));
}

TEST(HostCollectives, DeviceBytesStillGoThroughTheBackendsMemory) {
  // The byte collectives keep copying through the memory resource (device tensors).
  DeferredCopyMemory memory;
  SingleCommunicator c(&memory);
  std::vector<uint8_t> a = {1, 2, 3}, b(3, 0);
  c.all_gather(a.data(), b.data(), 3);
  EXPECT_EQ(memory.pending(), 1u);
  EXPECT_EQ(b, (std::vector<uint8_t>{0, 0, 0}));
  std::byte host{};
  memory.copy(&host, Domain::host, reinterpret_cast<const std::byte*>(b.data()), Domain::device, 1);  // a sync
  EXPECT_EQ(b, a);
}

}  // namespace
}  // namespace rcts
