// The CPU backend's copy stream (reference/backend/stream.hpp): one worker thread
// runs the queued operations in FIFO order; strict mode (no link model) holds each
// one back until someone waits on its event or a later one.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "reference/backend/stream.hpp"

namespace rcts::cpu {

class ThreadCopyStream;

class ThreadEvent final : public Event {
 public:
  bool done() const override;

 private:
  friend class ThreadCopyStream;
  mutable std::mutex mu_;
  bool done_ = false;
  std::exception_ptr error_;
  uint64_t seq_ = 0;
  const ThreadCopyStream* owner_ = nullptr;
};

class ThreadCopyStream final : public CopyStream {
 public:
  ThreadCopyStream(std::string name, LinkModel link);
  ~ThreadCopyStream() override;
  ThreadCopyStream(const ThreadCopyStream&) = delete;
  ThreadCopyStream& operator=(const ThreadCopyStream&) = delete;

  std::shared_ptr<Event> enqueue(std::function<void()> op, int64_t bytes) override;
  void wait(const std::shared_ptr<Event>& e) override;
  double exposed_wait_seconds() const override { return exposed_wait_s_; }
  int64_t bytes_copied() const override { return bytes_copied_; }
  const std::string& name() const override { return name_; }

 private:
  struct Op {
    std::function<void()> fn;
    int64_t bytes;
    std::shared_ptr<ThreadEvent> event;
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

}  // namespace rcts::cpu
