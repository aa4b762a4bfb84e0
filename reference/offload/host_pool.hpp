// Pinned host buffers for offloaded activations, pooled by (shape, dtype) so the
// steady state allocates nothing (docs/design.md §9). Buffers live in the host_pinned
// domain of the backend's memory, category offload_buffer, in the run's MemoryTracker.
#pragma once
#include <map>
#include <utility>
#include <vector>

#include "reference/core/tensor.hpp"

namespace rcts {

class HostPool {
 public:
  HostPool(MemoryTracker& tracker, MemoryResource& memory) : tracker_(tracker), memory_(memory) {}
  Tensor acquire(const Shape& shape, DType dtype, const std::string& name);
  void release(const Tensor& buffer);
  int64_t allocations() const { return allocations_; }  // buffers ever created
  int64_t pooled_bytes() const { return pooled_bytes_; }

 private:
  using Key = std::pair<Shape, DType>;
  MemoryTracker& tracker_;
  MemoryResource& memory_;
  std::map<Key, std::vector<Tensor>> free_;
  int64_t allocations_ = 0;
  int64_t pooled_bytes_ = 0;
};

}  // namespace rcts
