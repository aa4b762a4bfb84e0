// Instruction-set paths of the vectorised element-wise kernels (GeLU/SwiGLU, dropout
// mask, causal softmax): each family has its scalar definition and one vector source
// compiled at 4 (SSE2, baseline), 8 (AVX2) and 16 (AVX-512) lanes. Every path gives the
// same bits; only speed differs. Tests and benchmarks force paths; process-wide.
#pragma once
#include <atomic>

namespace rcts::cpu {

enum class VecPath { automatic, scalar, sse2, avx2, avx512 };

// Whether this CPU can run p (scalar, sse2 and automatic: always).
bool vec_path_supported(VecPath p);
const char* vec_path_name(VecPath p);

// The path one kernel family uses: forced by set(), else the widest supported.
class VecPathChoice {
 public:
  explicit VecPathChoice(const char* family) : family_(family) {}
  // Throws std::runtime_error naming the family and the path when the CPU lacks it.
  void set(VecPath p);
  // Never `automatic`.
  VecPath active() const;
  // The path one call runs: `requested` itself (checked like set()), or active() when
  // it is `automatic`. Backends pass their kernel table's path through this.
  VecPath resolve(VecPath requested) const;

 private:
  const char* family_;
  std::atomic<VecPath> path_{VecPath::automatic};
};

}  // namespace rcts::cpu
