#include <cstdlib>
#include <cstring>
#include <string_view>
#include <new>

#include "backends/cuda/cuda_support.hpp"
#include "backends/cuda/launch.hpp"

namespace rcts::cuda {

void check(cudaError_t e, const char* what, SourceLocation loc) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e), loc);
}

void check_launches(const char* op, SourceLocation loc) {
  if (const std::string err = take_launch_error(); !err.empty())
    throw Error(std::string("CUDA op '") + op + "': " + err, loc);
}

namespace {
thread_local cudaStream_t t_stream = nullptr;
constexpr std::align_val_t kHostAlign{64};
}  // namespace

cudaStream_t current_stream(cudaStream_t main) { return t_stream ? t_stream : main; }

StreamScope::StreamScope(cudaStream_t s) : previous_(t_stream) { t_stream = s; }
StreamScope::~StreamScope() { t_stream = previous_; }

CudaMemory::CudaMemory(cudaStream_t main, int device) : main_(main) {
  const char* v = std::getenv("RCTS_CUDA_POISON_FREED");
  poison_freed_ = !(v && std::string_view(v) == "0");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
  // Keep freed blocks for reuse instead of returning them to the driver at every sync.
  uint64_t keep = ~uint64_t{0};
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
}

CudaMemory::~CudaMemory() {
  cudaStreamSynchronize(main_);
  cudaMemPoolDestroy(pool_);
}

std::byte* CudaMemory::allocate(Domain d, int64_t bytes) {
  const size_t n = static_cast<size_t>(bytes > 0 ? bytes : 1);
  void* p = nullptr;
  switch (d) {
    case Domain::device: check(cudaMallocFromPoolAsync(&p, n, pool_, current_stream(main_)), "cudaMallocFromPoolAsync"); break;
    case Domain::host_pinned: check(cudaHostAlloc(&p, n, cudaHostAllocDefault), "cudaHostAlloc"); break;
    case Domain::host: p = ::operator new(n, kHostAlign); break;
  }
  return static_cast<std::byte*>(p);
}

void CudaMemory::deallocate(Domain d, std::byte* p, int64_t bytes) noexcept {
  switch (d) {
    case Domain::device:
      // Freed device bytes are poisoned in stream order before the pool may reuse them:
      // a copy that still reads them because a wait is missing (a D2H not yet done when
      // the offload frees its source) reads 0xFF bytes and fails the case, instead of
      // passing by luck. The copy streams' test delay makes such a race certain.
      if (poison_freed_ && bytes > 0) cuda::fill(current_stream(main_), p, 0xFF, bytes);
      cudaFreeAsync(p, current_stream(main_));
      break;
    case Domain::host_pinned:
      cudaDeviceSynchronize();  // no copy on any stream may still use it
      cudaFreeHost(p);
      break;
    case Domain::host: ::operator delete(p, kHostAlign); break;
  }
}

void CudaMemory::fill(Domain d, std::byte* p, uint8_t value, int64_t bytes) {
  if (bytes <= 0) return;
  const cudaStream_t s = current_stream(main_);
  if (d == Domain::device) {
    cuda::fill(s, p, value, bytes);
    check_launches("fill");
  } else {
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    std::memset(p, value, static_cast<size_t>(bytes));
  }
}

void CudaMemory::copy(std::byte* dst, Domain dd, const std::byte* src, Domain sd, int64_t bytes) {
  if (bytes <= 0 || dst == src) return;
  const cudaStream_t s = current_stream(main_);
  check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, s), "cudaMemcpyAsync");
  // Pageable host memory must not change before the copy read it, nor be read before
  // the copy wrote it; pinned copies inside a copy stream stay asynchronous (its event
  // tells when they are done).
  const bool pageable = dd == Domain::host || sd == Domain::host;
  if (pageable || (s == main_ && (dd != Domain::device || sd != Domain::device)))
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

int64_t CudaMemory::pool_high_water() const {
  uint64_t v = 0;
  check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &v), "cudaMemPoolGetAttribute");
  return static_cast<int64_t>(v);
}

void CudaMemory::reset_pool_high_water() {
  uint64_t zero = 0;
  check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero), "cudaMemPoolSetAttribute");
}

}  // namespace rcts::cuda
