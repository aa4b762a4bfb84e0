#include "reference/runtime/reduce.hpp"

#include <limits>

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

// Unaccounted device bytes for one collective.
class Staging {
 public:
  Staging(MemoryResource& memory, int64_t bytes) : memory_(memory), bytes_(bytes), p_(memory.allocate(Domain::device, bytes)) {}
  ~Staging() { memory_.deallocate(Domain::device, p_, bytes_); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  template <typename T> T* as() { return reinterpret_cast<T*>(p_); }

 private:
  MemoryResource& memory_;
  int64_t bytes_;
  std::byte* p_;
};

}  // namespace

template <typename T>
void all_reduce_sum(Communicator& comm, Backend& backend, T* data, int64_t n) {
  Staging gathered(backend.memory(), total_bytes(comm, "all_reduce_sum", n, sizeof(T), comm.size()));
  comm.all_gather(static_cast<const void*>(data), static_cast<void*>(gathered.as<T>()),
                  n * static_cast<int64_t>(sizeof(T)));
  const auto order = comm.summation_order();
  backend.ops<T>().sum_blocks(data, gathered.as<T>(), n, order);
}

template <typename T>
void reduce_scatter_sum(Communicator& comm, Backend& backend, const T* in, T* out, int64_t n_per_rank) {
  Staging chunks(backend.memory(), total_bytes(comm, "reduce_scatter_sum", n_per_rank, sizeof(T), comm.size()));
  comm.all_to_all(in, chunks.as<T>(), n_per_rank * static_cast<int64_t>(sizeof(T)));
  const auto order = comm.summation_order();
  if (n_per_rank > 0) backend.ops<T>().sum_blocks(out, chunks.as<T>(), n_per_rank, order);
}

template void all_reduce_sum<float>(Communicator&, Backend&, float*, int64_t);
template void all_reduce_sum<double>(Communicator&, Backend&, double*, int64_t);
template void reduce_scatter_sum<float>(Communicator&, Backend&, const float*, float*, int64_t);
template void reduce_scatter_sum<double>(Communicator&, Backend&, const double*, double*, int64_t);

}  // namespace rcts
