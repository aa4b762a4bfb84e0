// Storage: bytes in one memory domain of a backend's MemoryResource, accounted in a
// MemoryTracker (docs/design.md §3).
// release() frees the bytes but keeps the object (like untyped_storage().resize_(0));
// adopt() re-attaches another storage's bytes without copying, so every tensor
// viewing this storage sees them. Reading a released storage is an error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "reference/core/memory.hpp"
#include "reference/core/memory_resource.hpp"

namespace rcts {

// RCTS_POISON_UNINITIALIZED=1: uninitialized allocations (storages and workspace
// buffers) are filled with 0xFF (NaN in f32 and bf16), so an op that reads bytes it
// did not write shows up as a golden failure.
bool poison_uninitialized_enabled();

class Storage {
 public:
  // Allocates zero-filled bytes from `memory` (or, with zero = false, bytes the caller
  // overwrites completely: op outputs). `tracker` may be null (untracked scratch).
  static std::shared_ptr<Storage> allocate(MemoryTracker* tracker, MemoryResource& memory, Domain domain,
                                           Category category, int64_t bytes, std::string name, bool zero = true);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Checked access: throws an Error naming `reader` when the bytes were released. The
  // pointer is in the storage's domain: host code dereferences it only where
  // memory().host_accessible(domain()).
  std::byte* data(const std::string& reader);
  const std::byte* data(const std::string& reader) const;
  // Copies all bytes of `src` (same size) into this storage, across domains if need be.
  void copy_from(const Storage& src);

  // Poisons the bytes with 0xFF (a NaN in f32 and bf16), frees them, keeps the object.
  void release();
  // Takes over `donor`'s bytes (zero-copy). Sizes must match; the donor ends released.
  void adopt(Storage& donor);
  bool released() const { return !bytes_; }

  void retag(Category c);
  // Set on outputs an output-discarding checkpoint will release and recompute:
  // offload leaves them alone (the recompute, not a reload, brings them back).
  void mark_recomputed_by_checkpoint() { recomputed_by_checkpoint_ = true; }
  bool recomputed_by_checkpoint() const { return recomputed_by_checkpoint_; }
  Category category() const { return category_; }
  Domain domain() const { return domain_; }
  int64_t nbytes() const { return nbytes_; }
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  MemoryTracker* tracker() const { return tracker_; }
  MemoryResource& memory() const { return *memory_; }
  bool host_accessible() const { return memory_->host_accessible(domain_); }

 private:
  Storage() = default;
  void free_bytes() noexcept;
  std::byte* bytes_ = nullptr;
  int64_t nbytes_ = 0;
  MemoryTracker* tracker_ = nullptr;
  MemoryResource* memory_ = nullptr;
  Domain domain_ = Domain::host;
  Category category_ = Category::activation;
  uint64_t id_ = 0;
  std::string name_;
  bool recomputed_by_checkpoint_ = false;
};

// Copies `bytes` bytes between two storages' memory (any domains, any resources),
// e.g. a device tensor into an untracked host result.
void copy_bytes(std::byte* dst, const Storage& dst_storage, const std::byte* src, const Storage& src_storage,
                int64_t bytes);

}  // namespace rcts
