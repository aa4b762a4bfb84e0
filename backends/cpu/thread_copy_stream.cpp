#include "backends/cpu/thread_copy_stream.hpp"

#include <chrono>
#include <stdexcept>

namespace rcts::cpu {

bool ThreadEvent::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

ThreadCopyStream::ThreadCopyStream(std::string name, LinkModel link) : name_(std::move(name)), link_(link) {
  worker_ = std::thread([this] { run(); });
}

ThreadCopyStream::~ThreadCopyStream() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    release_up_to_ = next_seq_;
  }
  cv_.notify_all();
  worker_.join();
}

std::shared_ptr<Event> ThreadCopyStream::enqueue(std::function<void()> op, int64_t bytes) {
  auto e = std::make_shared<ThreadEvent>();
  {
    std::lock_guard lock(mu_);
    e->seq_ = next_seq_++;
    e->owner_ = this;
    queue_.push_back({std::move(op), bytes, e});
  }
  cv_.notify_all();
  return e;
}

void ThreadCopyStream::wait(const std::shared_ptr<Event>& event) {
  auto e = std::dynamic_pointer_cast<ThreadEvent>(event);
  if (!e || e->owner_ != this)
    throw std::invalid_argument("copy stream '" + name_ + "': waited on an event another stream recorded");
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::unique_lock lock(mu_);
    release_up_to_ = std::max(release_up_to_, e->seq_);
    cv_.notify_all();
    // Lock order: stream, then event (the worker never holds both).
    cv_.wait(lock, [&] { return e->done(); });
  }
  exposed_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(e->mu_);
  if (e->error_) std::rethrow_exception(e->error_);
}

void ThreadCopyStream::run() {
  for (;;) {
    Op op;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        if (queue_.empty()) return stop_;
        return !link_.strict() || queue_.front().event->seq_ <= release_up_to_;
      });
      if (queue_.empty()) return;
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    if (!link_.strict()) {
      const double secs = link_.latency_s + static_cast<double>(op.bytes) / link_.bandwidth_bytes_per_s;
      std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    }
    std::exception_ptr error;
    try {
      op.fn();
    } catch (...) {
      error = std::current_exception();
    }
    // Drop the copy's captures (storages, host buffers) before the event says done:
    // a waiter that then frees its last reference must really free the bytes.
    op.fn = nullptr;
    {
      std::lock_guard lock(op.event->mu_);
      op.event->done_ = true;
      op.event->error_ = error;
    }
    {
      std::lock_guard lock(mu_);
      bytes_copied_ += op.bytes;
      cv_.notify_all();
    }
  }
}

}  // namespace rcts::cpu
