// The AVX-512 (16-lane) instance of the float activation kernels (activation_vec.inc). This
// file is compiled with -mavx512f/dq/bw/vl (kernels/CMakeLists.txt); activation.cpp calls it
// only after checking the CPU.
#define RCTS_VEC_W 16
#include "kernels/cpu/activation_vec.inc"

namespace rcts::cpu::detail {

void gelu_forward_avx512(float* out, const float* inp, int64_t n) { vec::gelu_forward(out, inp, n); }
void gelu_backward_avx512(float* dinp, const float* dout, const float* inp, int64_t n) {
  vec::gelu_backward(dinp, dout, inp, n);
}
void swiglu_forward_avx512(float* out, const float* inp, int64_t N, int64_t F) { vec::swiglu_forward(out, inp, N, F); }
void swiglu_backward_avx512(float* dinp, const float* dout, const float* inp, int64_t N, int64_t F) {
  vec::swiglu_backward(dinp, dout, inp, N, F);
}

}  // namespace rcts::cpu::detail
