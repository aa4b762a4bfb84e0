// Element types of rcts tensors. Activations are stored in bf16 (default), f32 or
// f64; parameters and gradients in f32 (f64 in gradcheck runs); masks in u8.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rcts {

enum class DType : uint8_t { f64, f32, bf16, u8, i32, i64 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: return 4;
    case DType::bf16: return 2;
    case DType::u8: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f64: return "f64";
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "?";
}

// numpy dtype string for .npy dumps (little-endian). bf16 has none: dumped as uint16 bits.
constexpr std::string_view dtype_numpy(DType t) {
  switch (t) {
    case DType::f64: return "<f8";
    case DType::f32: return "<f4";
    case DType::bf16: return "<u2";
    case DType::u8: return "|u1";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
  }
  return "?";
}

// Parses "f64", "f32", "bf16", ... ; throws rcts::Error naming the bad value.
DType parse_dtype(std::string_view name);

constexpr bool is_floating(DType t) { return t == DType::f64 || t == DType::f32 || t == DType::bf16; }

}  // namespace rcts
