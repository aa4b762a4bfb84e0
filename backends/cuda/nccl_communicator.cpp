#include "backends/cuda/nccl_communicator.hpp"

#include <numeric>
#include <vector>

#include "backends/cuda/cuda_support.hpp"

namespace rcts::cuda {

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw Error(std::string("NCCL: ") + what + ": " + ncclGetErrorString(r));
}

bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// A device view of a host buffer for one collective: copied in before, out after.
class Staged {
 public:
  Staged(const void* host, int64_t bytes, cudaStream_t s, bool copy_in)
      : host_(const_cast<void*>(host)), bytes_(bytes), s_(s), device_(on_device(host)) {
    if (device_ || bytes <= 0) return;
    check(cudaMallocAsync(&p_, static_cast<size_t>(bytes), s), "cudaMallocAsync");
    if (copy_in) check(cudaMemcpyAsync(p_, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  }
  ~Staged() {
    if (p_) cudaFreeAsync(p_, s_);
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;
  void* p() const { return device_ ? host_ : p_; }
  // Back to the host (for outputs) and wait, so the caller may read it.
  void copy_out() {
    if (!device_ && p_) check(cudaMemcpyAsync(host_, p_, static_cast<size_t>(bytes_), cudaMemcpyDeviceToHost, s_), "cudaMemcpyAsync");
    if (!device_) check(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
  }

 private:
  void* host_;
  int64_t bytes_;
  cudaStream_t s_;
  bool device_;
  void* p_ = nullptr;
};

}  // namespace

std::unique_ptr<NcclCommunicator> NcclCommunicator::world(Communicator& host_world, cudaStream_t stream) {
  ncclUniqueId id{};
  if (host_world.rank() == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  host_world.broadcast(&id, sizeof id, 0);
  ncclComm_t comm = nullptr;
  nccl_check(ncclCommInitRank(&comm, host_world.size(), id, host_world.rank()), "ncclCommInitRank");
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(comm, stream));
}

NcclCommunicator::NcclCommunicator(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {
  nccl_check(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
  nccl_check(ncclCommCount(comm_, &size_), "ncclCommCount");
}

NcclCommunicator::~NcclCommunicator() {
  cudaStreamSynchronize(stream_);
  ncclCommDestroy(comm_);
}

void NcclCommunicator::all_gather(const void* send, void* recv, int64_t bytes) {
  RCTS_CHECK(bytes >= 0, "nccl all_gather: negative byte count " + std::to_string(bytes));
  if (bytes == 0) return;
  Staged in(send, bytes, stream_, true), out(recv, bytes * size_, stream_, false);
  nccl_check(ncclAllGather(in.p(), out.p(), static_cast<size_t>(bytes), ncclUint8, comm_, stream_), "ncclAllGather");
  out.copy_out();
}

void NcclCommunicator::all_to_allv(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) {
  int64_t total_send = 0, total_recv = 0;
  for (int p = 0; p < size_; ++p) {
    RCTS_CHECK(send_bytes[p] >= 0 && recv_bytes[p] >= 0, "nccl all_to_allv: negative byte count");
    total_send += send_bytes[p];
    total_recv += recv_bytes[p];
  }
  Staged in(send, total_send, stream_, true), out(recv, total_recv, stream_, false);
  const auto* sp = static_cast<const unsigned char*>(in.p());
  auto* rp = static_cast<unsigned char*>(out.p());
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  int64_t so = 0, ro = 0;
  for (int p = 0; p < size_; ++p) {
    if (send_bytes[p] > 0)
      nccl_check(ncclSend(sp + so, static_cast<size_t>(send_bytes[p]), ncclUint8, p, comm_, stream_), "ncclSend");
    if (recv_bytes[p] > 0)
      nccl_check(ncclRecv(rp + ro, static_cast<size_t>(recv_bytes[p]), ncclUint8, p, comm_, stream_), "ncclRecv");
    so += send_bytes[p];
    ro += recv_bytes[p];
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  out.copy_out();
}

void NcclCommunicator::broadcast(void* data, int64_t bytes, int root) {
  RCTS_CHECK(bytes >= 0 && root >= 0 && root < size_, "nccl broadcast: bad byte count or root");
  if (bytes == 0) return;
  Staged buf(data, bytes, stream_, true);
  nccl_check(ncclBroadcast(buf.p(), buf.p(), static_cast<size_t>(bytes), ncclUint8, root, comm_, stream_),
             "ncclBroadcast");
  buf.copy_out();
}

void NcclCommunicator::barrier() {
  int64_t one = 1;
  std::vector<int64_t> all(static_cast<size_t>(size_));
  all_gather(&one, all.data(), sizeof one);
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  ncclComm_t sub = nullptr;
  nccl_check(ncclCommSplit(comm_, color, key, &sub, nullptr), "ncclCommSplit");
  return std::unique_ptr<Communicator>(new NcclCommunicator(sub, stream_));
}

}  // namespace rcts::cuda
