#include "reference/core/memory_resource.hpp"

#include <cstring>
#include <new>

namespace rcts {

namespace {

constexpr std::align_val_t kAlign{64};

class HostHeap final : public MemoryResource {
 public:
  std::string name() const override { return "host heap"; }
  std::byte* allocate(Domain, int64_t bytes) override {
    return static_cast<std::byte*>(::operator new(static_cast<size_t>(bytes > 0 ? bytes : 1), kAlign));
  }
  void deallocate(Domain, std::byte* p, int64_t) noexcept override { ::operator delete(p, kAlign); }
  void fill(Domain, std::byte* p, uint8_t value, int64_t bytes) override {
    if (bytes > 0) std::memset(p, value, static_cast<size_t>(bytes));
  }
  void copy(std::byte* dst, Domain, const std::byte* src, Domain, int64_t bytes) override {
    if (bytes > 0 && dst != src) std::memmove(dst, src, static_cast<size_t>(bytes));
  }
  bool host_accessible(Domain) const override { return true; }
};

}  // namespace

MemoryResource& host_memory() {
  static HostHeap heap;
  return heap;
}

}  // namespace rcts
