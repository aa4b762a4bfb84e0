#include "reference/offload/host_pool.hpp"

namespace rcts {

Tensor HostPool::acquire(const Shape& shape, DType dtype, const std::string& name) {
  auto& list = free_[{shape, dtype}];
  if (!list.empty()) {
    Tensor t = list.back();
    list.pop_back();
    return t.view(shape, name);
  }
  ++allocations_;
  Tensor t = Tensor::empty(shape, dtype, {&tracker_, Domain::host_pinned, Category::offload_buffer, &memory_}, name);
  pooled_bytes_ += t.nbytes();
  return t;
}

void HostPool::release(const Tensor& buffer) { free_[{buffer.shape(), buffer.dtype()}].push_back(buffer); }

}  // namespace rcts
