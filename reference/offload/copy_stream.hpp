// CPU copy streams (DESIGN §9): a worker thread runs copies in FIFO order, like a
// CUDA copy stream; an Event says when a copy is done. Waiting on an event from
// the main stream is timed (exposed wait).
//
// Two modes:
//  - strict (no link model): a copy runs only when someone waits on its event (or
//    on a later one): the worst case of every race, so "used before its copy
//    completed" is detected deterministically, and byte accounting is exact;
//  - link model (bandwidth > 0): copies run eagerly on the worker and take
//    latency + bytes / bandwidth, so overlap with compute is real and measurable.
// An exception inside a copy is stored in its event and rethrown by wait().
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace rcts {

struct LinkModel {
  double bandwidth_bytes_per_s = 0;  // 0: strict streams
  double latency_s = 0;
  bool strict() const { return bandwidth_bytes_per_s <= 0; }
};

class Event {
 public:
  bool done() const;

 private:
  friend class CopyStream;
  mutable std::mutex mu_;
  bool done_ = false;
  std::exception_ptr error_;
  uint64_t seq_ = 0;
};

class CopyStream {
 public:
  CopyStream(std::string name, LinkModel link);
  ~CopyStream();
  CopyStream(const CopyStream&) = delete;
  CopyStream& operator=(const CopyStream&) = delete;

  std::shared_ptr<Event> enqueue(std::function<void()> op, int64_t bytes);
  // Blocks until `e` (and every copy before it) completed; rethrows its error.
  void wait(const std::shared_ptr<Event>& e);
  double exposed_wait_seconds() const { return exposed_wait_s_; }
  int64_t bytes_copied() const { return bytes_copied_; }
  const std::string& name() const { return name_; }

 private:
  struct Op {
    std::function<void()> fn;
    int64_t bytes;
    std::shared_ptr<Event> event;
  };
  void run();
  std::string name_;
  LinkModel link_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  uint64_t next_seq_ = 1;
  uint64_t release_up_to_ = 0;  // strict mode: ops with seq <= this may run
  bool stop_ = false;
  double exposed_wait_s_ = 0;
  int64_t bytes_copied_ = 0;
  std::thread worker_;
};

}  // namespace rcts
