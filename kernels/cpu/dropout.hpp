// Dropout, CPU reference kernels: mask generation by the shared rule and mask application.
//
// dropout_mask implements kernels/common/dropout_rule.hpp exactly: element i of a call at
// generator position (seed, offset) reads 32-bit word i % 4 of Philox block offset + i / 4
// and is kept (mask 1) iff (word >> 8) >= threshold(p). Blocks are independent, threads
// split blocks, so the mask depends only on (seed, offset, n, p). The caller advances its
// generator by dropout_rule::blocks_for(n) = ceil(n / 4) blocks; this function does not
// (it has no generator). p == 0 gives all ones (threshold 0), p == 1 all zeros.
// Paths: the scalar loop (one Philox block per iteration) is the definition; the vector
// paths (dropout_vec.inc; 4 lanes SSE2, 8 AVX2, 16 AVX-512) run Philox on one block per
// lane with the same integer operations, so every path gives the same mask bytes
// (tests/kernels/dropout_softmax_vec_test.cpp).
//
// dropout_forward / dropout_backward: y = x * mask * scale, evaluated as
// (x * T(mask)) * scale with scale = T(dropout_rule::scale(p)) = T(1 / (1 - p)) (computed
// in double, rounded once to T). Dropped elements become +-0 (x * 0, so NaN/inf stay NaN,
// as in torch). p == 0 is the identity (bit copy); p == 1 gives x * 0 (no inf scale).
// Element-wise: no reductions. dinp is written (=). p must be in [0, 1]
// (std::invalid_argument otherwise). out may alias in (and dinp dout).
#pragma once

#include <cstdint>

#include "kernels/cpu/vec_path.hpp"

namespace rcts::cpu {

// `path` forces a vector path for this call; automatic follows set_dropout_path.
void dropout_mask(uint8_t* mask,  // (n) 1 keep, 0 drop
                  int64_t n, double p, uint64_t seed, uint64_t offset, VecPath path = VecPath::automatic);

// Which implementation dropout_mask uses: see vec_path.hpp (automatic = the widest the
// CPU supports; same bits on every path). Selecting a path the CPU lacks throws
// std::runtime_error.
using DropoutPath = VecPath;
void set_dropout_path(DropoutPath p);
DropoutPath active_dropout_path();  // never `automatic`
bool dropout_path_supported(DropoutPath p);

template <typename T>
void dropout_forward(T* out,               // (n)
                     const T* inp,         // (n)
                     const uint8_t* mask,  // (n)
                     int64_t n, double p);

template <typename T>
void dropout_backward(T* dinp,             // (n)  written
                      const T* dout,       // (n)
                      const uint8_t* mask, // (n)  the forward's mask
                      int64_t n, double p);

}  // namespace rcts::cpu
