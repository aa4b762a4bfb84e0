#include "reference/core/workspace.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/core/storage.hpp"

namespace rcts {

namespace {
constexpr size_t kGranule = 4096;  // capacities are rounded up so near sizes share blocks
}  // namespace

Workspace::~Workspace() {
  // Buffers must not outlive their workspace; free what is left either way.
  for (const Block& b : idle_) memory_.deallocate(domain_, b.p, static_cast<int64_t>(b.capacity));
  for (const Block& b : held_) memory_.deallocate(domain_, b.p, static_cast<int64_t>(b.capacity));
}

std::byte* Workspace::lease(size_t bytes, bool zero) {
  // Account first: a capacity limit throws before anything changes.
  if (tracker_) tracker_->on_alloc(domain_, Category::workspace, static_cast<int64_t>(bytes));
  std::byte* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Best fit among idle blocks: the smallest that holds the request.
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
      if (it->capacity >= bytes && (best == idle_.end() || it->capacity < best->capacity)) best = it;
    Block b{};
    if (best != idle_.end()) {
      b = *best;
      idle_.erase(best);
    } else {
      b.capacity = std::max<size_t>(kGranule, (bytes + kGranule - 1) / kGranule * kGranule);
      try {
        b.p = memory_.allocate(domain_, static_cast<int64_t>(b.capacity));
      } catch (...) {
        if (tracker_) tracker_->on_free(domain_, Category::workspace, static_cast<int64_t>(bytes));
        throw;
      }
      reserved_ += static_cast<int64_t>(b.capacity);
      ++heap_allocations_;
    }
    held_.push_back(b);
    p = b.p;
  }
  if (zero) memory_.fill(domain_, p, 0, static_cast<int64_t>(bytes));
  else if (poison_uninitialized_enabled()) memory_.fill(domain_, p, 0xFF, static_cast<int64_t>(bytes));
  return p;
}

void Workspace::give_back(std::byte* p, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(held_.begin(), held_.end(), [p](const Block& b) { return b.p == p; });
    RCTS_CHECK(it != held_.end(), "workspace: a buffer was returned twice or to the wrong workspace");
    idle_.push_back(*it);
    held_.erase(it);
  }
  if (tracker_) tracker_->on_free(domain_, Category::workspace, static_cast<int64_t>(bytes));
}

int64_t Workspace::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

int64_t Workspace::heap_allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return heap_allocations_;
}

void Workspace::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const Block& b : idle_) {
    reserved_ -= static_cast<int64_t>(b.capacity);
    memory_.deallocate(domain_, b.p, static_cast<int64_t>(b.capacity));
  }
  idle_.clear();
}

}  // namespace rcts
