// MemoryTimeline: what `rcts run --report` draws — the bytes held for backward on the
// device and the offloaded bytes resident on the host, sampled at every change, with
// labelled marks (a micro-batch's forward / backward start) and, for offload, the
// interval of every copy on its stream. It only observes: nothing it records feeds
// back into a run, so a run's numbers are the same with or without it.
//
// Thread-safe: offload copy workers report host bytes and copy intervals while the
// main thread allocates. A sample's `seq` orders all samples and marks of one run;
// times are microseconds since the timeline was made (wall clock, for the trace only).
// After `max_samples` samples further ones are dropped and `truncated` says so, so a
// long run cannot grow it without bound.
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace rcts {

struct TimelineSample {
  int64_t seq = 0;
  int64_t device_bytes = 0;  // held for backward on the device (saved + checkpoint inputs)
  int64_t host_bytes = 0;    // offloaded bytes resident on the host
};

struct TimelineMark {
  int64_t seq = 0;     // the next sample's seq when the mark was set
  double t_us = 0;
  std::string label;   // e.g. "step 0 mb 1 forward"
};

struct CopyInterval {
  std::string stream;  // "d2h", "h2d"
  std::string what;    // the storage copied
  int64_t bytes = 0;
  double start_us = 0, end_us = 0;
};

struct TimelineRecord {
  std::vector<TimelineSample> samples;
  std::vector<TimelineMark> marks;
  std::vector<CopyInterval> copies;
  bool truncated = false;
  double origin_us = 0;  // the steady clock at creation: places runs (and ranks on one host) on one axis
};

class MemoryTimeline {
 public:
  explicit MemoryTimeline(size_t max_samples = 200000);

  // The device bytes held for backward are now `bytes` (the tracker calls this).
  void device(int64_t bytes);
  // Offloaded bytes on the host grew (or shrank, negative) by `delta`.
  void host_delta(int64_t delta);
  void mark(std::string label);
  void copy(CopyInterval c);
  double now_us() const;

  TimelineRecord snapshot() const;

 private:
  void push_locked();
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point t0_;
  size_t max_samples_;
  int64_t device_ = 0, host_ = 0, seq_ = 0;
  TimelineRecord rec_;
};

}  // namespace rcts
