// The NCCL communicator (design §8): device bytes between GPUs, behind the same
// Communicator interface as MPI. It moves bytes only — all-gather, personalised
// exchange by grouped send/recv, broadcast — so sums stay reduce.hpp's gather-then-add
// in rank order on the backend (NCCL's own reductions follow no fixed order). Work goes
// to the backend's main stream, ordered with its kernels; arguments in host memory (the
// MoE dispatch plan exchanges counts from the host) are staged through device buffers.
// Bootstrap as nccl-tests does: rank 0 makes the unique id, the host world (MPI)
// broadcasts it, every rank joins with its world rank. One GPU per rank; the CUDA backend
// picks its device from the launcher's local rank.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>

#include "reference/parallel/communicator.hpp"

namespace rcts::cuda {

class NcclCommunicator final : public Communicator {
 public:
  // Collective over `host_world`: every rank calls it.
  static std::unique_ptr<NcclCommunicator> world(Communicator& host_world, cudaStream_t stream);
  ~NcclCommunicator() override;

  using Communicator::all_gather;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  void all_gather(const void* send, void* recv, int64_t bytes) override;
  void all_to_allv(const void* send, const int64_t* send_bytes, void* recv, const int64_t* recv_bytes) override;
  void broadcast(void* data, int64_t bytes, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  NcclCommunicator(ncclComm_t comm, cudaStream_t stream);
  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_ = 0, size_ = 1;
};

}  // namespace rcts::cuda
