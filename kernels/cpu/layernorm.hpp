// LayerNorm over the last dimension, CPU reference kernels (float and double).
//
// out = (x - mean) * rstd * weight + bias, per row of C elements, with
//   mean = (sum_c x[c]) / C,  var = (sum_c (x[c] - mean)^2) / C,  rstd = 1 / sqrt(var + eps)
// (two-pass variance, biased; eps converted once to T). Statistics are NOT saved: the
// backward recomputes mean and rstd from the input with the same code, so its values are
// bit-identical to the forward's (design §4: LN statistics are recomputed, not saved).
//
// Reduction orders (fixed; results do not depend on the number of OpenMP threads):
//   - row sums (mean, variance, and in backward sum(g) and sum(g*n), g = dout*weight) are
//     accumulated in T from 0 in column index order c = 0..C-1;
//   - dweight[c] and dbias[c]: the per-row terms dout*n and dout are summed from 0 in
//     row order r = 0..N-1, and that sum is then added once to the existing value (+=);
//   - threads split rows for out/dinp and column blocks for dweight/dbias; no value is
//     ever combined across threads.
// Expression order per element: n = (x - mean) * rstd; out = n * weight + bias;
//   dinp = ((g - sum(g)/C) - n * (sum(g*n)/C)) * rstd.
// Gradients: dinp is written (=); dweight and dbias accumulate (+=).
// bias may be null (no bias); then dbias may be null too.
#pragma once

#include <cstdint>

namespace rcts::cpu {

template <typename T>
void layernorm_forward(T* out,           // (N, C)
                       const T* inp,     // (N, C)
                       const T* weight,  // (C)
                       const T* bias,    // (C) or null
                       int64_t N, int64_t C, double eps);

template <typename T>
void layernorm_backward(T* dinp,          // (N, C)  written
                        T* dweight,       // (C)     accumulated
                        T* dbias,         // (C)     accumulated, or null
                        const T* dout,    // (N, C)
                        const T* inp,     // (N, C)  the forward's input
                        const T* weight,  // (C)
                        int64_t N, int64_t C, double eps);

}  // namespace rcts::cpu
