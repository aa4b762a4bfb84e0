#include "reference/core/memory.hpp"

#include <algorithm>

#include "reference/core/error.hpp"

namespace rcts {

std::string_view domain_name(Domain d) {
  switch (d) {
    case Domain::host: return "host";
    case Domain::host_pinned: return "host_pinned";
    case Domain::device: return "device";
  }
  return "?";
}

std::string_view category_name(Category c) {
  switch (c) {
    case Category::param: return "param";
    case Category::grad: return "grad";
    case Category::activation: return "activation";
    case Category::saved_activation: return "saved_activation";
    case Category::checkpoint_input: return "checkpoint_input";
    case Category::workspace: return "workspace";
    case Category::offload_buffer: return "offload_buffer";
  }
  return "?";
}

namespace {
void add(MemoryStats& s, int64_t bytes) {
  s.current += bytes;
  s.peak = std::max(s.peak, s.current);
  if (bytes > 0) ++s.allocations;
}

// Moves `bytes` into (out of, when negative) every set that holds `c` but not `except`.
template <typename Sets> void add_to_sets(Sets& sets, Category c, int64_t bytes, std::optional<Category> except = {}) {
  for (int i = 1; i < static_cast<int>(sets.size()); ++i) {
    const bool in = (i >> static_cast<int>(c)) & 1;
    const bool out = except && ((i >> static_cast<int>(*except)) & 1);
    if (!in || out) continue;
    MemoryStats& s = sets[static_cast<size_t>(i)];
    s.current += bytes;
    s.peak = std::max(s.peak, s.current);
    if (bytes > 0 && !except) ++s.allocations;
  }
}
}  // namespace

void MemoryTracker::on_alloc(Domain d, Category c, int64_t bytes) {
  std::lock_guard lock(mu_);
  auto& dom = domains_[static_cast<int>(d)];
  const auto& cap = capacity_[static_cast<int>(d)];
  if (cap && dom.current + bytes > *cap) {
    throw Error("out of memory in domain '" + std::string(domain_name(d)) + "': allocating " +
                std::to_string(bytes) + " bytes of " + std::string(category_name(c)) + " with " +
                std::to_string(dom.current) + " in use exceeds the capacity " + std::to_string(*cap));
  }
  add(dom, bytes);
  add(categories_[static_cast<int>(d)][static_cast<int>(c)], bytes);
  add_to_sets(sets_[static_cast<int>(d)], c, bytes);
}

void MemoryTracker::on_free(Domain d, Category c, int64_t bytes) {
  std::lock_guard lock(mu_);
  domains_[static_cast<int>(d)].current -= bytes;
  categories_[static_cast<int>(d)][static_cast<int>(c)].current -= bytes;
  add_to_sets(sets_[static_cast<int>(d)], c, -bytes);
}

void MemoryTracker::on_retag(Domain d, Category from, Category to, int64_t bytes) {
  std::lock_guard lock(mu_);
  auto& cats = categories_[static_cast<int>(d)];
  cats[static_cast<int>(from)].current -= bytes;
  auto& t = cats[static_cast<int>(to)];
  t.current += bytes;
  t.peak = std::max(t.peak, t.current);
  add_to_sets(sets_[static_cast<int>(d)], from, -bytes, to);  // sets holding both see no change
  add_to_sets(sets_[static_cast<int>(d)], to, bytes, from);
}

MemoryStats MemoryTracker::domain(Domain d) const {
  std::lock_guard lock(mu_);
  return domains_[static_cast<int>(d)];
}

MemoryStats MemoryTracker::category(Domain d, Category c) const {
  std::lock_guard lock(mu_);
  return categories_[static_cast<int>(d)][static_cast<int>(c)];
}

MemoryStats MemoryTracker::categories(Domain d, CategorySet s) const {
  std::lock_guard lock(mu_);
  return sets_[static_cast<int>(d)][static_cast<size_t>(s.index())];
}

void MemoryTracker::reset_peaks() {
  std::lock_guard lock(mu_);
  for (auto& s : domains_) s.peak = s.current;
  for (auto& row : categories_)
    for (auto& s : row) s.peak = s.current;
  for (auto& row : sets_)
    for (auto& s : row) s.peak = s.current;
}

void MemoryTracker::set_capacity(Domain d, std::optional<int64_t> bytes) {
  std::lock_guard lock(mu_);
  capacity_[static_cast<int>(d)] = bytes;
}

std::optional<int64_t> MemoryTracker::capacity(Domain d) const {
  std::lock_guard lock(mu_);
  return capacity_[static_cast<int>(d)];
}

}  // namespace rcts
