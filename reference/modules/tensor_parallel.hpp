// Tensor- and sequence-parallel plumbing for the dense block (design §8).
// Token layout is (s, b, h) row-major, so a sequence shard of rank r is the
// contiguous rows [r*s/t*b, (r+1)*s/t*b): gathering is a byte concatenation in rank
// order (exact), and reduce-scatter sums in rank order (Communicator's contract).
#pragma once
#include <utility>
#include <vector>

#include "reference/runtime/runtime.hpp"

namespace rcts {

// Rows of a full weight that TP rank `rank` of `size` keeps when the output
// dimension is `blocks` equal blocks split evenly inside each block (QKV: 3 blocks
// q|k|v; SwiGLU fc1: 2 blocks; GeLU fc1: 1).
std::vector<std::pair<int64_t, int64_t>> tp_row_blocks(int64_t rows, int blocks, int rank, int size);
// The same for consecutive sections of unequal sizes, each split over the ranks.
std::vector<std::pair<int64_t, int64_t>> tp_row_sections(const std::vector<int64_t>& sections, int rank, int size);

// Sequence-parallel all-gather of a (tokens/t, width) shard into (tokens, width).
Tensor sp_gather(Runtime& rt, const Tensor& shard, const std::string& name);
// The rows of this rank's sequence shard of a full (tokens, width) tensor (a copy).
Tensor sp_shard(Runtime& rt, const Tensor& full, const std::string& name);

}  // namespace rcts
