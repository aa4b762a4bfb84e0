// The AVX2 (8-lane) instance of the dropout mask kernel (dropout_vec.inc). This file is
// compiled with -mavx2 -mfma (kernels/CMakeLists.txt); dropout.cpp calls it only after
// checking the CPU.
#define RCTS_VEC_W 8
#include "kernels/cpu/dropout_vec.inc"

namespace rcts::cpu::detail {

void dropout_mask_avx2(uint8_t* mask, int64_t n, uint32_t thr, uint64_t seed, uint64_t offset) {
  vec::dropout_mask(mask, n, thr, seed, offset);
}

}  // namespace rcts::cpu::detail
