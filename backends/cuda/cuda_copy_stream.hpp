// Copy streams of the CUDA backend (design §9): each is a real cudaStream with events.
// enqueue(op) makes the copy stream wait for the work queued on the main stream so far
// (the D2H copy reads what compute wrote), runs op with the copy stream as the thread's
// current stream (its copies, frees and fills go there), then records the op's event.
// wait(e) blocks the host until the event completed (timed: the exposed wait), which
// also orders every later main-stream launch after it. done() polls the event.
//
// Test hook: with a delay set (set_copy_delay_us, or RCTS_CUDA_COPY_DELAY_US), a spin
// kernel runs at the head of every copy, so a missing wait finds the copy unfinished
// every time instead of once in a while.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "reference/backend/stream.hpp"

namespace rcts::cuda {

class CudaEvent final : public Event {
 public:
  CudaEvent();
  ~CudaEvent() override;
  bool done() const override;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

class CudaCopyStream final : public CopyStream {
 public:
  CudaCopyStream(std::string name, cudaStream_t main);
  ~CudaCopyStream() override;
  std::shared_ptr<Event> enqueue(std::function<void()> op, int64_t bytes) override;
  void wait(const std::shared_ptr<Event>& e) override;
  double exposed_wait_seconds() const override { return exposed_wait_s_; }
  int64_t bytes_copied() const override { return bytes_copied_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_;
  cudaStream_t main_, stream_ = nullptr;
  cudaEvent_t compute_done_ = nullptr;
  double exposed_wait_s_ = 0;
  int64_t bytes_copied_ = 0;
};

// Microseconds of spin at the head of every copy (0: none).
void set_copy_delay_us(int64_t us);
int64_t copy_delay_us();

}  // namespace rcts::cuda
