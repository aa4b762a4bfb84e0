// Activations, CPU reference kernels (float and double): GeLU (tanh form) and SwiGLU.
//
// GeLU, tanh approximation (Megatron/GPT-2 "gelu" with approximate='tanh'):
//   u = k0 * (x + k1 * x^3),  t = tanh(u),  y = (0.5 * x) * (1 + t)
//   dy/dx = 0.5 * (1 + t) + ((0.5 * x) * (1 - t * t)) * (k0 * (1 + k3 * x^2))
// with the exact literals k0 = 0.7978845608028654 (sqrt(2/pi) to 16 digits),
// k1 = 0.044715, k3 = 0.134145 (= 3 * k1, written out, not multiplied at run time); each
// literal is rounded once to T (float literals carry an f suffix). x^3 is (x * x) * x,
// x^2 is x * x, tanh is rcts::detmath::tanh. Expression order exactly as written above.
//
// SwiGLU (Megatron's chunk order): inp (N, 2F) is split along the last dimension into
// a = inp[:, :F] and b = inp[:, F:]; out = silu(a) * b with silu(a) = a * sigmoid(a),
// sigmoid = rcts::detmath::sigmoid. Backward, s = sigmoid(a):
//   da = (dout * b) * (s * (1 + a * (1 - s))),   db = dout * (a * s).
//
// No reductions: every output element depends on its own inputs only; threads split
// elements (rows for SwiGLU). dinp is written (=). GeLU's out may alias inp and dinp may
// alias dout or inp; swiglu_backward's dinp may alias inp; swiglu_forward must not alias.
//
// Paths (float; double always runs the scalar loops): the scalar loops evaluate the
// formulas above element by element and are the definition. The vector paths
// (activation_vec.inc; 4 lanes SSE2, 8 AVX2, 16 AVX-512) evaluate, per lane, the very same
// IEEE operations in the same order, detmath's tanh/sigmoid/expm1/exp included, with
// its branches turned into per-lane selects; lanes whose result is NaN are recomputed by
// the scalar code. So every path gives bitwise the scalar result for every input, any
// length and thread count (tests/kernels/activation_vec_test.cpp). NaN results are NaN
// on every path; their payload is fixed only where a single NaN source is involved (where
// two meet, e.g. NaN dout and inf inp, it depends on operand order, which compilers may
// swap in a commutative op, in the scalar code too).
#pragma once

#include <cstdint>

#include "kernels/cpu/vec_path.hpp"

namespace rcts::cpu {

// `path` (float only) forces a vector path for this call; automatic follows the
// process-wide choice (set_activation_path).
template <typename T>
void gelu_forward(T* out,        // (n)
                  const T* inp,  // (n)
                  int64_t n, VecPath path = VecPath::automatic);

template <typename T>
void gelu_backward(T* dinp,        // (n)  written
                   const T* dout,  // (n)
                   const T* inp,   // (n)  the forward's input
                   int64_t n, VecPath path = VecPath::automatic);

template <typename T>
void swiglu_forward(T* out,        // (N, F)
                    const T* inp,  // (N, 2F): [a | b]
                    int64_t N, int64_t F, VecPath path = VecPath::automatic);

template <typename T>
void swiglu_backward(T* dinp,        // (N, 2F)  written: [da | db]
                     const T* dout,  // (N, F)
                     const T* inp,   // (N, 2F)  the forward's input
                     int64_t N, int64_t F, VecPath path = VecPath::automatic);

// Which implementation the float kernels use: see vec_path.hpp (automatic = the widest the
// CPU supports; same bits on every path). Selecting a path the CPU lacks throws
// std::runtime_error.
using ActivationPath = VecPath;
void set_activation_path(ActivationPath p);
ActivationPath active_activation_path();  // never `automatic`
bool activation_path_supported(ActivationPath p);

}  // namespace rcts::cpu
