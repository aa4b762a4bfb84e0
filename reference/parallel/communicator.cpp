#include "reference/parallel/communicator.hpp"

#include <cstring>
#include <limits>

#include "reference/core/faults.hpp"

namespace rcts {

namespace {

// n elements of `elem` bytes from each of `ranks` ranks, checked against int64 overflow.
int64_t total_bytes(const Communicator& c, const char* op, int64_t n, int64_t elem, int64_t ranks) {
  RCTS_CHECK(n >= 0, c.backend() + " " + op + ": negative element count " + std::to_string(n));
  RCTS_CHECK(n <= std::numeric_limits<int64_t>::max() / elem / ranks,
             c.backend() + " " + op + ": " + std::to_string(n) + " elements x " + std::to_string(ranks) +
                 " ranks overflows the byte count");
  return n * elem * ranks;
}

}  // namespace

std::unique_ptr<Communicator> Communicator::split(int, int) {
  throw Error("backend '" + backend() + "' cannot create sub-communicators (split)");
}

std::vector<int> Communicator::summation_order() const {
  const int n = size();
  const int first = fault_on(Fault::reduction_arrival_order) ? rank() : 0;
  std::vector<int> order(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) order[static_cast<size_t>(k)] = (first + k) % n;
  return order;
}

// Adds blocks[order[0]] + blocks[order[1]] + ... element by element into out; each
// element is summed left to right, so the loop order over elements does not matter.
template <class T>
static void sum_blocks(const T* blocks, int64_t n, const std::vector<int>& order, T* out) {
  const T* first = blocks + static_cast<int64_t>(order[0]) * n;
  for (int64_t i = 0; i < n; ++i) out[i] = first[i];
  for (size_t k = 1; k < order.size(); ++k) {
    const T* b = blocks + static_cast<int64_t>(order[k]) * n;
    for (int64_t i = 0; i < n; ++i) out[i] = out[i] + b[i];
  }
}

template <class T>
void Communicator::all_reduce_sum_impl(T* data, int64_t n) {
  const int64_t bytes = total_bytes(*this, "all_reduce_sum", n, sizeof(T), size());
  std::vector<T> gathered(static_cast<size_t>(bytes / static_cast<int64_t>(sizeof(T))));
  all_gather(static_cast<const void*>(data), static_cast<void*>(gathered.data()),
             n * static_cast<int64_t>(sizeof(T)));
  sum_blocks(gathered.data(), n, summation_order(), data);
}

// Each rank needs only its own chunk from every peer, so the chunks travel by
// all_to_all (size() x n_per_rank elements per rank) rather than a full all_gather
// (size()^2 x n_per_rank); the sum order is the same rank order.
template <class T>
void Communicator::reduce_scatter_sum_impl(const T* in, T* out, int64_t n_per_rank) {
  const int64_t bytes = total_bytes(*this, "reduce_scatter_sum", n_per_rank, sizeof(T), size());
  std::vector<T> chunks(static_cast<size_t>(bytes / static_cast<int64_t>(sizeof(T))));
  all_to_all(in, chunks.data(), n_per_rank * static_cast<int64_t>(sizeof(T)));
  if (n_per_rank > 0) sum_blocks(chunks.data(), n_per_rank, summation_order(), out);
}

void Communicator::all_reduce_sum(float* data, int64_t n) { all_reduce_sum_impl(data, n); }
void Communicator::all_reduce_sum(double* data, int64_t n) { all_reduce_sum_impl(data, n); }
void Communicator::reduce_scatter_sum(const float* in, float* out, int64_t n_per_rank) {
  reduce_scatter_sum_impl(in, out, n_per_rank);
}
void Communicator::reduce_scatter_sum(const double* in, double* out, int64_t n_per_rank) {
  reduce_scatter_sum_impl(in, out, n_per_rank);
}

void Communicator::all_to_all(const void* send, void* recv, int64_t bytes_per_peer) {
  RCTS_CHECK(bytes_per_peer >= 0, backend() + " all_to_all: negative block size " + std::to_string(bytes_per_peer));
  const std::vector<int64_t> counts(static_cast<size_t>(size()), bytes_per_peer);
  all_to_allv(send, counts.data(), recv, counts.data());
}

// --- SingleCommunicator ---------------------------------------------------------------

void SingleCommunicator::all_gather(const void* send, void* recv, int64_t bytes) {
  RCTS_CHECK(bytes >= 0, "single all_gather: negative byte count " + std::to_string(bytes));
  if (bytes > 0 && send != recv) std::memmove(recv, send, static_cast<size_t>(bytes));
}

void SingleCommunicator::all_to_allv(const void* send, const int64_t* send_bytes, void* recv,
                                     const int64_t* recv_bytes) {
  RCTS_CHECK(send_bytes[0] >= 0 && recv_bytes[0] >= 0, "single all_to_allv: negative byte count");
  RCTS_CHECK(send_bytes[0] == recv_bytes[0], "single all_to_allv: rank 0 sends " + std::to_string(send_bytes[0]) +
                                                 " bytes to itself but expects " + std::to_string(recv_bytes[0]));
  if (send_bytes[0] > 0 && send != recv) std::memmove(recv, send, static_cast<size_t>(send_bytes[0]));
}

void SingleCommunicator::broadcast(void*, int64_t bytes, int root) {
  RCTS_CHECK(bytes >= 0, "single broadcast: negative byte count " + std::to_string(bytes));
  RCTS_CHECK(root == 0, "single broadcast: root " + std::to_string(root) + " is not a rank of a world of one");
}

std::unique_ptr<Communicator> SingleCommunicator::split(int, int) { return std::make_unique<SingleCommunicator>(); }

}  // namespace rcts
