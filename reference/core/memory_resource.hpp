// MemoryResource: where a backend's bytes live (docs/design.md §3, §11). One resource
// serves the three memory domains of a backend (host, host_pinned, device): it
// allocates, frees and fills bytes there and copies between any two domains. Storage
// and the workspace allocate only through a resource, never with operator new, so a
// backend with real device memory (CUDA) changes nothing above this interface.
//
// host_memory() is the plain 64-byte-aligned heap for every domain; it is what the CPU
// backend uses, and what untracked host tensors (results kept after a run) use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "reference/core/memory.hpp"

namespace rcts {

class MemoryResource {
 public:
  virtual ~MemoryResource() = default;
  // A short name for messages ("host heap", "cuda").
  virtual std::string name() const = 0;
  // `bytes` >= 0 bytes, 64-byte aligned, contents unspecified. Throws on failure.
  virtual std::byte* allocate(Domain d, int64_t bytes) = 0;
  virtual void deallocate(Domain d, std::byte* p, int64_t bytes) noexcept = 0;
  // Sets `bytes` bytes at p (in domain d) to `value`.
  virtual void fill(Domain d, std::byte* p, uint8_t value, int64_t bytes) = 0;
  // Copies `bytes` bytes (overlapping ranges allowed).
  virtual void copy(std::byte* dst, Domain dst_domain, const std::byte* src, Domain src_domain, int64_t bytes) = 0;
  // Whether host code may read and write bytes of domain d directly.
  virtual bool host_accessible(Domain d) const = 0;
};

// The heap: every domain is ordinary RAM (the CPU backend's memory; device budgets are
// kept by the MemoryTracker, not by where the bytes are).
MemoryResource& host_memory();

}  // namespace rcts
