// The AVX2 (8-lane) instance of the float causal softmax forward (softmax_vec.inc). This
// file is compiled with -mavx2 -mfma (kernels/CMakeLists.txt); softmax.cpp calls it only
// after checking the CPU.
#define RCTS_VEC_W 8
#include "kernels/cpu/softmax_vec.inc"

namespace rcts::cpu::detail {

void softmax_causal_forward_avx2(float* out, const float* inp, int64_t BH, int64_t S) {
  vec::softmax_causal_forward(out, inp, BH, S);
}

}  // namespace rcts::cpu::detail
