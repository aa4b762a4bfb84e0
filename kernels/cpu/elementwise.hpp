// Element-wise CPU kernels (float and double unless noted): add, in-place add, bias add
// over rows and its gradient, scale, copy, and bf16 rounding of activations.
//
// Every output element is one IEEE operation on its inputs, as written below; threads
// split elements, so nothing depends on the thread count. The one reduction,
// bias_backward, sums dout over rows from 0 in row order r = 0..N-1 per column (threads
// split column blocks) and then adds that sum once to dbias (+=).
// Outputs may alias inputs element for element (out == a, out == inp, ...).
#pragma once

#include <cstdint>

namespace rcts::cpu {

// out[i] = a[i] + b[i]
template <typename T>
void add(T* out, const T* a, const T* b, int64_t n);  // all (n)

// a[i] = a[i] + b[i]
template <typename T>
void add_inplace(T* a, const T* b, int64_t n);  // all (n)

// out[r][c] = inp[r][c] + bias[c]
template <typename T>
void bias_add(T* out,         // (N, C)
              const T* inp,   // (N, C)
              const T* bias,  // (C)
              int64_t N, int64_t C);

// dbias[c] += sum_r dout[r][c]  (row order, from 0, then added once)
template <typename T>
void bias_backward(T* dbias,       // (C)  accumulated
                   const T* dout,  // (N, C)
                   int64_t N, int64_t C);

// out[i] = inp[i] * s
template <typename T>
void scale(T* out, const T* inp, T s, int64_t n);  // all (n)

// out[i] = inp[i] (bit copy)
template <typename T>
void copy(T* out, const T* inp, int64_t n);  // all (n)

// The ordered rank sum of a reduction (docs/design.md §8): blocks holds nblocks
// contiguous blocks of n elements; out[i] = ((blocks[order[0]][i] + blocks[order[1]][i])
// + ...) + blocks[order[nblocks-1]][i], left to right in `order`, no FMA.
template <typename T>
void sum_blocks(T* out, const T* blocks, int64_t n, const int* order, int nblocks);

// x[i] = round_bf16(x[i]) in place: nearest bf16, ties to even, NaN kept (quiet),
// overflow past the largest bf16 to inf (kernels/common/bf16.hpp). float only.
void round_to_bf16(float* x, int64_t n);  // (n)

}  // namespace rcts::cpu
