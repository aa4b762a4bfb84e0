// Deterministic sums over a communicator (docs/design.md §2, §8). The communicator
// only moves bytes; the sum is the backend's ordered rank sum, so every backend and
// every rank adds the same numbers in the same order:
//
//     out[i] = ((in_0[i] + in_1[i]) + in_2[i]) + ... + in_{size-1}[i]
//
// in the element's own type, no FMA, no reassociation, the order given by
// Communicator::summation_order() (rank order; rotated under the arrival-order mutant).
// Staging buffers come from the backend's device memory and are not accounted: they
// model a collective library's own buffers, which frameworks do not see either.
#pragma once
#include <cstdint>

#include "reference/backend/backend.hpp"
#include "reference/parallel/communicator.hpp"

namespace rcts {

// In place: data[i] becomes the rank-ordered sum of data[i] over all ranks.
template <typename T>
void all_reduce_sum(Communicator& comm, Backend& backend, T* data, int64_t n);

// `in` holds size() * n_per_rank elements; this rank receives in `out` chunk rank() of
// the rank-ordered sum. The chunks travel by all_to_all (size() x n_per_rank elements
// per rank) rather than a full all_gather; the sum order is the same.
template <typename T>
void reduce_scatter_sum(Communicator& comm, Backend& backend, const T* in, T* out, int64_t n_per_rank);

}  // namespace rcts
