#include "reference/parallel/communicator.hpp"

#include <cstring>

#include "reference/core/faults.hpp"

namespace rcts {

std::unique_ptr<Communicator> Communicator::split(int, int) {
  throw Error("backend '" + backend() + "' cannot create sub-communicators (split)");
}

void Communicator::send(const void*, int64_t, int) {
  throw Error("backend '" + backend() + "' has no point-to-point send (pipeline parallelism needs it)");
}

void Communicator::recv(void*, int64_t, int) {
  throw Error("backend '" + backend() + "' has no point-to-point recv (pipeline parallelism needs it)");
}

void Communicator::send_recv(const void*, int64_t, int, void*, int64_t, int) {
  throw Error("backend '" + backend() + "' has no point-to-point send_recv (pipeline parallelism needs it)");
}

std::vector<int> Communicator::summation_order() const {
  const int n = size();
  const int first = fault_on(Fault::reduction_arrival_order) ? rank() : 0;
  std::vector<int> order(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) order[static_cast<size_t>(k)] = (first + k) % n;
  return order;
}

void Communicator::all_to_all(const void* send, void* recv, int64_t bytes_per_peer) {
  RCTS_CHECK(bytes_per_peer >= 0, backend() + " all_to_all: negative block size " + std::to_string(bytes_per_peer));
  const std::vector<int64_t> counts(static_cast<size_t>(size()), bytes_per_peer);
  all_to_allv(send, counts.data(), recv, counts.data());
}

void Communicator::all_to_all_host(const void* send, void* recv, int64_t bytes_per_peer) {
  RCTS_CHECK(bytes_per_peer >= 0, backend() + " all_to_all: negative block size " + std::to_string(bytes_per_peer));
  const std::vector<int64_t> counts(static_cast<size_t>(size()), bytes_per_peer);
  all_to_allv_host(send, counts.data(), recv, counts.data());
}

// --- SingleCommunicator ---------------------------------------------------------------

namespace {
void check_self_exchange(const int64_t* send_bytes, const int64_t* recv_bytes) {
  RCTS_CHECK(send_bytes[0] >= 0 && recv_bytes[0] >= 0, "single all_to_allv: negative byte count");
  RCTS_CHECK(send_bytes[0] == recv_bytes[0], "single all_to_allv: rank 0 sends " + std::to_string(send_bytes[0]) +
                                                 " bytes to itself but expects " + std::to_string(recv_bytes[0]));
}
}  // namespace

void SingleCommunicator::all_gather(const void* send, void* recv, int64_t bytes) {
  RCTS_CHECK(bytes >= 0, "single all_gather: negative byte count " + std::to_string(bytes));
  copy(recv, send, bytes, Domain::device);
}

void SingleCommunicator::all_to_allv(const void* send, const int64_t* send_bytes, void* recv,
                                     const int64_t* recv_bytes) {
  check_self_exchange(send_bytes, recv_bytes);
  copy(recv, send, send_bytes[0], Domain::device);
}

void SingleCommunicator::all_gather_host(const void* send, void* recv, int64_t bytes) {
  RCTS_CHECK(bytes >= 0, "single all_gather: negative byte count " + std::to_string(bytes));
  copy(recv, send, bytes, Domain::host);
}

void SingleCommunicator::all_to_allv_host(const void* send, const int64_t* send_bytes, void* recv,
                                          const int64_t* recv_bytes) {
  check_self_exchange(send_bytes, recv_bytes);
  copy(recv, send, send_bytes[0], Domain::host);
}

void SingleCommunicator::broadcast(void*, int64_t bytes, int root) {
  RCTS_CHECK(bytes >= 0, "single broadcast: negative byte count " + std::to_string(bytes));
  RCTS_CHECK(root == 0, "single broadcast: root " + std::to_string(root) + " is not a rank of a world of one");
}

std::unique_ptr<Communicator> SingleCommunicator::split(int, int) { return std::make_unique<SingleCommunicator>(memory_); }

void SingleCommunicator::copy(void* dst, const void* src, int64_t bytes, Domain d) {
  if (bytes <= 0 || dst == src) return;
  if (memory_ && d == Domain::device)
    memory_->copy(static_cast<std::byte*>(dst), Domain::device, static_cast<const std::byte*>(src), Domain::device, bytes);
  else
    std::memmove(dst, src, static_cast<size_t>(bytes));
}

}  // namespace rcts
