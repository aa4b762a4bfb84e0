// Causal softmax over attention scores, CPU reference kernels (float and double).
//
// Scores are (BH, S, S): BH = batch * heads independent matrices, row i = query, column
// j = key. Row i attends to j <= i only:
//   out[i][j] = exp(x[i][j] - m_i) / sum_i   for j <= i,   out[i][j] = 0 for j > i,
//   m_i = max_{j<=i} x[i][j],  sum_i = sum_{j<=i} exp(x[i][j] - m_i),
// with exp = rcts::detmath::exp (no libm) and one IEEE division per element.
// Backward (from the saved output, as Megatron saves softmax outputs):
//   dinp[i][j] = out[i][j] * (dout[i][j] - s_i) for j <= i, 0 for j > i,
//   s_i = sum_{k<=i} dout[i][k] * out[i][k].
// Reduction orders: m_i starts at x[i][0]; sum_i and s_i are accumulated in T from 0;
// all three in column order j = 0..i. Threads split rows only, so bits do not depend on
// the thread count.
// In place is allowed: out may alias inp, dinp may alias dout (each row reads an
// element before writing it, and the row's reductions finish before its writes).
// Paths (forward, float; double and the backward always run the scalar loops): the scalar
// loop is the definition; the vector paths (softmax_vec.inc; 4 lanes SSE2, 8 AVX2, 16
// AVX-512) compute the maximum and the exps in vector lanes (per lane the IEEE operations
// of detmath::exp), keep each row's sum a scalar chain in column order, and divide
// element-wise, so every path gives bitwise the scalar result for every input
// (tests/kernels/dropout_softmax_vec_test.cpp).
// Gradients: dinp is written (=). A row whose unmasked scores are all -inf gives NaN
// (cannot happen for plain causal masking: the diagonal is always unmasked).
#pragma once

#include <cstdint>

#include "kernels/cpu/vec_path.hpp"

namespace rcts::cpu {

// `path` (float only) forces a vector path for this call; automatic follows
// set_softmax_path.
template <typename T>
void softmax_causal_forward(T* out,        // (BH, S, S)
                            const T* inp,  // (BH, S, S) scores
                            int64_t BH, int64_t S, VecPath path = VecPath::automatic);

// Which implementation the float forward uses: see vec_path.hpp (automatic = the widest the
// CPU supports; same bits on every path). Selecting a path the CPU lacks throws
// std::runtime_error.
using SoftmaxPath = VecPath;
void set_softmax_path(SoftmaxPath p);
SoftmaxPath active_softmax_path();  // never `automatic`
bool softmax_path_supported(SoftmaxPath p);

template <typename T>
void softmax_causal_backward(T* dinp,        // (BH, S, S)  written
                             const T* dout,  // (BH, S, S)
                             const T* out,   // (BH, S, S)  the forward's output
                             int64_t BH, int64_t S);

}  // namespace rcts::cpu
