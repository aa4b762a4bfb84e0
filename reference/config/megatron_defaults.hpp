// Defaults that Megatron-LM derives from other settings, where rcts follows them
// (docs/megatron.md cites the source). Pure integer arithmetic, no config types.
#pragma once
#include <cstdint>

namespace rcts {

// megatron/training/arguments.py, validate_args: when --ffn-hidden-size is not given,
// 4 * hidden_size, or with --swiglu int((4 * hidden_size * 2 / 3) / 64) * 64 (two
// projections of 2/3 the width keep the parameter count near 4h's, kept a multiple of
// 64). Python's float division then int() truncates; the integer floor(8h / 192) * 64
// computed here equals it for every hidden_size below 200 000 (checked against Python).
inline int64_t megatron_default_ffn_hidden_size(int64_t hidden_size, bool swiglu) {
  if (!swiglu) return 4 * hidden_size;
  return (8 * hidden_size) / (3 * 64) * 64;
}

}  // namespace rcts
