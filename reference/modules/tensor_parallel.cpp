#include "reference/modules/tensor_parallel.hpp"

#include <cstring>

namespace rcts {

std::vector<std::pair<int64_t, int64_t>> tp_row_blocks(int64_t rows, int blocks, int rank, int size) {
  RCTS_CHECK(rows % (int64_t{blocks} * size) == 0, "cannot split " + std::to_string(rows) + " rows into " +
                                                      std::to_string(blocks) + " block(s) over " + std::to_string(size) +
                                                      " tensor-parallel ranks");
  const int64_t block = rows / blocks, part = block / size;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int b = 0; b < blocks; ++b) out.emplace_back(b * block + rank * part, b * block + (rank + 1) * part);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> tp_row_sections(const std::vector<int64_t>& sections, int rank, int size) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t begin = 0;
  for (int64_t n : sections) {
    RCTS_CHECK(n % size == 0, "cannot split a section of " + std::to_string(n) + " rows over " + std::to_string(size) +
                                  " tensor-parallel ranks");
    out.emplace_back(begin + rank * (n / size), begin + (rank + 1) * (n / size));
    begin += n;
  }
  return out;
}

Tensor sp_gather(Runtime& rt, const Tensor& shard, const std::string& name) {
  Communicator& tp = *rt.tp_group;
  Shape shape = shard.shape();
  shape[0] *= tp.size();
  Tensor full = Tensor::empty(shape, shard.dtype(), rt.place(), name);
  tp.all_gather(shard.bytes(), full.bytes(), shard.nbytes());
  return full;
}

Tensor sp_shard(Runtime& rt, const Tensor& full, const std::string& name) {
  Communicator& tp = *rt.tp_group;
  RCTS_CHECK(full.dim(0) % tp.size() == 0, "sequence parallelism: " + std::to_string(full.dim(0)) +
                                               " token rows of '" + full.name() + "' do not split over " +
                                               std::to_string(tp.size()) + " ranks");
  const int64_t rows = full.dim(0) / tp.size();
  Tensor view = full.rows(tp.rank() * rows, (tp.rank() + 1) * rows);
  return view.clone(rt.place(), name);
}

}  // namespace rcts
