// What this CPU (and OS) can run, for choosing instruction-set paths at run time.
// libgcc's __builtin_cpu_supports reports AVX2 / AVX-512 only when the OS also saves
// the YMM / ZMM and mask state (XGETBV), so a true answer is safe to act on.
// Baseline code only: never include this from an *_avx2.cpp / *_avx512.cpp file.
#pragma once

namespace rcts::cpu {

// AVX2 and FMA: the *_avx2.cpp files are compiled with -mavx2 -mfma.
inline bool cpu_has_avx2_fma() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

// AVX-512 F, DQ, BW and VL: the *_avx512.cpp files are compiled with all four.
inline bool cpu_has_avx512() {
  static const bool ok = cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return ok;
}

}  // namespace rcts::cpu
