#include "reference/core/memory_timeline.hpp"

namespace rcts {

MemoryTimeline::MemoryTimeline(size_t max_samples) : t0_(std::chrono::steady_clock::now()), max_samples_(max_samples) {
  rec_.origin_us = std::chrono::duration<double, std::micro>(t0_.time_since_epoch()).count();
}

double MemoryTimeline::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
}

void MemoryTimeline::push_locked() {
  if (rec_.samples.size() >= max_samples_) {
    rec_.truncated = true;
    return;
  }
  rec_.samples.push_back({seq_++, device_, host_});
}

void MemoryTimeline::device(int64_t bytes) {
  std::lock_guard lock(mu_);
  if (bytes == device_) return;  // e.g. a re-tag inside the set
  device_ = bytes;
  push_locked();
}

void MemoryTimeline::host_delta(int64_t delta) {
  std::lock_guard lock(mu_);
  if (delta == 0) return;
  host_ += delta;
  push_locked();
}

void MemoryTimeline::mark(std::string label) {
  const double t = now_us();
  std::lock_guard lock(mu_);
  rec_.marks.push_back({seq_, t, std::move(label)});
}

void MemoryTimeline::copy(CopyInterval c) {
  std::lock_guard lock(mu_);
  if (rec_.copies.size() >= max_samples_) {
    rec_.truncated = true;
    return;
  }
  rec_.copies.push_back(std::move(c));
}

TimelineRecord MemoryTimeline::snapshot() const {
  std::lock_guard lock(mu_);
  return rec_;
}

}  // namespace rcts
