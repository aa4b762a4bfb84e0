// The AVX-512 (16-lane) instance of the dropout mask kernel (dropout_vec.inc). This file is
// compiled with -mavx512f/dq/bw/vl (kernels/CMakeLists.txt); dropout.cpp calls it only
// after checking the CPU.
#define RCTS_VEC_W 16
#include "kernels/cpu/dropout_vec.inc"

namespace rcts::cpu::detail {

void dropout_mask_avx512(uint8_t* mask, int64_t n, uint32_t thr, uint64_t seed, uint64_t offset) {
  vec::dropout_mask(mask, n, thr, seed, offset);
}

}  // namespace rcts::cpu::detail
