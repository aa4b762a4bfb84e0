// What the CUDA backend's parts share (host code over the CUDA runtime): error checks,
// the memory resource, and the stream its work goes to. Memory operations and op
// launches go to the backend's main stream, except inside a copy stream's operation,
// where the thread's current stream is that copy stream (StreamScope): a D2H copy and
// the release of its source that follows it are then ordered on the D2H stream.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "reference/core/error.hpp"
#include "reference/core/memory_resource.hpp"

namespace rcts::cuda {

void check(cudaError_t e, const char* what, SourceLocation loc = SourceLocation::current());
// After an op's launches: the first failed launch as an rcts::Error naming the op and
// the kernel ("CUDA op 'add': add_kernel: no CUDA-capable device is detected"), never a
// silent pass.
void check_launches(const char* op, SourceLocation loc = SourceLocation::current());

// The stream this thread's CUDA work goes to: the innermost StreamScope's, else `main`.
cudaStream_t current_stream(cudaStream_t main);

class StreamScope {
 public:
  explicit StreamScope(cudaStream_t s);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t previous_;
};

// Device memory from a stream-ordered pool of its own (so its high-water mark is this
// backend's alone), pinned host memory, the heap; copies that touch host memory wait for
// their stream.
class CudaMemory final : public MemoryResource {
 public:
  CudaMemory(cudaStream_t main, int device);
  ~CudaMemory() override;
  std::string name() const override { return "cuda"; }
  std::byte* allocate(Domain d, int64_t bytes) override;
  void deallocate(Domain d, std::byte* p, int64_t bytes) noexcept override;
  void fill(Domain d, std::byte* p, uint8_t value, int64_t bytes) override;
  void copy(std::byte* dst, Domain dd, const std::byte* src, Domain sd, int64_t bytes) override;
  bool host_accessible(Domain d) const override { return d != Domain::device; }
  // The pool's used-memory high-water mark since the last reset (cross-check of the
  // tracker's exact device peak).
  int64_t pool_high_water() const;
  void reset_pool_high_water();

 private:
  cudaStream_t main_;
  cudaMemPool_t pool_ = nullptr;
  bool poison_freed_ = true;  // RCTS_CUDA_POISON_FREED=0 turns it off (timing runs)
};

}  // namespace rcts::cuda
