// Workspace: op-internal scratch (category `workspace`, design §3) without heap churn.
//
// An op takes a buffer for its own duration; the bytes come from a pool the Workspace
// keeps, so the same op shapes, step after step, reuse the same memory instead of
// allocating and faulting in fresh pages. While a buffer is held, its requested size
// is accounted in the tracker (the workspace's domain, category `workspace`) exactly as
// a fresh allocation of that size would be, so peaks and capacity limits never depend
// on what the pool happens to hold. Idle pooled bytes are not in any domain's
// `current`; reserved_bytes() reports them, like a caching allocator's reserved memory.
//
// Buffers are not zeroed unless asked (zeros()); under RCTS_POISON_UNINITIALIZED=1
// they are filled with 0xFF like uninitialized storages, so an op that reads scratch
// it did not write shows up in the poisoned conformance run.
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/core/memory.hpp"
#include "reference/core/memory_resource.hpp"

namespace rcts {

class Workspace {
 public:
  // Blocks come from `memory` in `domain` (a backend's device memory in a run).
  Workspace(MemoryTracker* tracker, Domain domain, MemoryResource& memory = host_memory())
      : tracker_(tracker), domain_(domain), memory_(memory) {}
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  // A held buffer of n elements of T; returns its bytes to the pool when destroyed.
  template <typename T>
  class Buffer {
   public:
    Buffer() = default;
    Buffer(Buffer&& o) noexcept { *this = std::move(o); }
    Buffer& operator=(Buffer&& o) noexcept {
      if (this != &o) {
        reset();
        std::swap(ws_, o.ws_);
        std::swap(block_, o.block_);
        std::swap(n_, o.n_);
      }
      return *this;
    }
    ~Buffer() { reset(); }
    T* data() { return reinterpret_cast<T*>(block_); }
    const T* data() const { return reinterpret_cast<const T*>(block_); }
    size_t size() const { return n_; }
    T& operator[](size_t i) { return data()[i]; }
    const T& operator[](size_t i) const { return data()[i]; }
    T* begin() { return data(); }
    T* end() { return data() + n_; }

   private:
    friend class Workspace;
    void reset() {
      if (ws_) ws_->give_back(block_, n_ * sizeof(T));
      ws_ = nullptr;
      block_ = nullptr;
      n_ = 0;
    }
    Workspace* ws_ = nullptr;
    std::byte* block_ = nullptr;
    size_t n_ = 0;
  };

  // n elements, contents unspecified (poisoned under RCTS_POISON_UNINITIALIZED).
  template <typename T>
  Buffer<T> take(size_t n) {
    return make<T>(n, false);
  }
  // n elements, all +0.
  template <typename T>
  Buffer<T> zeros(size_t n) {
    return make<T>(n, true);
  }

  // Bytes the pool owns (held and idle) and how many heap allocations it made.
  int64_t reserved_bytes() const;
  int64_t heap_allocations() const;
  // Frees the idle blocks (held buffers stay valid).
  void trim();

 private:
  struct Block {
    std::byte* p;
    size_t capacity;
  };
  template <typename T>
  Buffer<T> make(size_t n, bool zero) {
    Buffer<T> b;
    b.block_ = lease(n * sizeof(T), zero);
    b.ws_ = this;
    b.n_ = n;
    return b;
  }
  std::byte* lease(size_t bytes, bool zero);
  void give_back(std::byte* p, size_t bytes);

  MemoryTracker* tracker_;
  Domain domain_;
  MemoryResource& memory_;
  mutable std::mutex mu_;
  std::vector<Block> idle_;
  std::vector<Block> held_;
  int64_t reserved_ = 0;
  int64_t heap_allocations_ = 0;
};

}  // namespace rcts
