#include "backends/cuda/cuda_copy_stream.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "backends/cuda/cuda_support.hpp"
#include "backends/cuda/launch.hpp"

namespace rcts::cuda {

namespace {
std::atomic<int64_t> g_delay_us{[] {
  const char* v = std::getenv("RCTS_CUDA_COPY_DELAY_US");
  return v ? std::atoll(v) : 0LL;
}()};
}  // namespace

void set_copy_delay_us(int64_t us) { g_delay_us.store(us < 0 ? 0 : us); }
int64_t copy_delay_us() { return g_delay_us.load(); }

CudaEvent::CudaEvent() { check(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming), "cudaEventCreate"); }
CudaEvent::~CudaEvent() { cudaEventDestroy(e_); }
bool CudaEvent::done() const { return cudaEventQuery(e_) == cudaSuccess; }

CudaCopyStream::CudaCopyStream(std::string name, cudaStream_t main) : name_(std::move(name)), main_(main) {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming), "cudaEventCreate");
}

CudaCopyStream::~CudaCopyStream() {
  cudaStreamSynchronize(stream_);
  cudaEventDestroy(compute_done_);
  cudaStreamDestroy(stream_);
}

std::shared_ptr<Event> CudaCopyStream::enqueue(std::function<void()> op, int64_t bytes) {
  // The copy sees everything the main stream computed so far.
  check(cudaEventRecord(compute_done_, main_), "cudaEventRecord");
  check(cudaStreamWaitEvent(stream_, compute_done_, 0), "cudaStreamWaitEvent");
  if (const int64_t us = copy_delay_us(); us > 0) {
    spin(stream_, us * 1000);
    check_launches("copy delay");
  }
  {
    StreamScope scope(stream_);
    op();
  }
  auto e = std::make_shared<CudaEvent>();
  check(cudaEventRecord(e->get(), stream_), "cudaEventRecord");
  bytes_copied_ += bytes;
  return e;
}

void CudaCopyStream::wait(const std::shared_ptr<Event>& event) {
  auto e = std::dynamic_pointer_cast<CudaEvent>(event);
  if (!e) throw Error("copy stream '" + name_ + "': waited on an event another backend recorded");
  const auto t0 = std::chrono::steady_clock::now();
  check(cudaEventSynchronize(e->get()), "cudaEventSynchronize");
  exposed_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace rcts::cuda
