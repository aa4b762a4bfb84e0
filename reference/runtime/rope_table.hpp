// RoPE rotation tables for multi-latent attention (design §14), built once on the host
// in double with IEEE + - * / only (no libm: glibc's exp/log/sin/cos are not promised
// to be correctly rounded, so their bits could differ between machines), then rounded
// once to the compute type. The same table therefore reaches every backend.
//
// MLA's RoPE (Megatron-LM apply_rotary_pos_emb with mla_rotary_interleaved, rope_type
// "rope", mscale 1): for position p, a part x of even length r, half = r/2 and j < half,
//   y[j]        = x[2j]   cos(p w_j) - x[2j+1] sin(p w_j)
//   y[half + j] = x[2j+1] cos(p w_j) + x[2j]   sin(p w_j),   w_j = base^(-2j/r)
// (the pairs are de-interleaved on output, as Megatron's MLA leaves them). The table
// holds, per position, the r x r matrix R_p with y = R_p x.
#pragma once
#include <cstdint>
#include <vector>

namespace rcts {

namespace rope_math {
// Deterministic double-precision helpers (documented in rope_table.cpp).
double ln(double x);          // x > 0
double exp(double x);
void sincos(double x, double& s, double& c);  // x >= 0
}  // namespace rope_math

// R_p for p = 0 .. positions-1, row-major r x r each: positions * r * r doubles.
std::vector<double> rope_rotation_table(int64_t positions, int64_t r, double base);

}  // namespace rcts
