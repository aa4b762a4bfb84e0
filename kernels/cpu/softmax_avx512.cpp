// The AVX-512 (16-lane) instance of the float causal softmax forward (softmax_vec.inc).
// This file is compiled with -mavx512f/dq/bw/vl (kernels/CMakeLists.txt); softmax.cpp
// calls it only after checking the CPU.
#define RCTS_VEC_W 16
#include "kernels/cpu/softmax_vec.inc"

namespace rcts::cpu::detail {

void softmax_causal_forward_avx512(float* out, const float* inp, int64_t BH, int64_t S) {
  vec::softmax_causal_forward(out, inp, BH, S);
}

}  // namespace rcts::cpu::detail
