// Copy streams and events (docs/design.md §9, §11): the offload machinery's view of a
// backend's asynchronous copies. A stream runs the operations given to it in FIFO
// order, like a CUDA copy stream; each returns an Event that says when it is done.
// Waiting on an event from the main stream is timed (exposed wait). An exception
// inside an operation is stored in its event and rethrown by wait().
//
// Backends make streams (Backend::make_copy_stream). The CPU backend's streams are
// worker threads with two modes, chosen by the link model:
//  - strict (bandwidth 0): an operation runs only when someone waits on its event (or
//    a later one): the worst case of every race, so "used before its copy completed"
//    shows deterministically and byte accounting is exact;
//  - link model (bandwidth > 0): operations run eagerly and take latency + bytes /
//    bandwidth, so overlap with compute is real and measurable.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rcts {

struct LinkModel {
  double bandwidth_bytes_per_s = 0;  // 0: strict streams
  double latency_s = 0;
  bool strict() const { return bandwidth_bytes_per_s <= 0; }
};

class Event {
 public:
  virtual ~Event() = default;
  virtual bool done() const = 0;
};

class CopyStream {
 public:
  virtual ~CopyStream() = default;
  // Queues `op` (a copy of `bytes` bytes, plus what must follow it in stream order,
  // e.g. freeing the source). The op's captures are dropped before its event is done.
  virtual std::shared_ptr<Event> enqueue(std::function<void()> op, int64_t bytes) = 0;
  // Blocks until `e` (and everything queued before it) completed; rethrows its error.
  virtual void wait(const std::shared_ptr<Event>& e) = 0;
  virtual double exposed_wait_seconds() const = 0;
  virtual int64_t bytes_copied() const = 0;
  virtual const std::string& name() const = 0;
};

}  // namespace rcts
