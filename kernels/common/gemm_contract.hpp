// What every backend's exact GEMM shares: the operand layout flags and the K block
// length of the accumulation order (the order itself is documented in
// kernels/cpu/gemm.hpp and docs/design.md §2). Header-only, host and device.
#pragma once
#include <cstdint>

namespace rcts {

enum class Trans { N, T };

// K is split into blocks of this many consecutive k; each block sum starts from +0.0.
// Never change it without changing every backend and every golden file.
inline constexpr int64_t kGemmKC = 256;

}  // namespace rcts
