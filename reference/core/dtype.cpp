#include "reference/core/dtype.hpp"

#include "reference/core/error.hpp"

namespace rcts {

DType parse_dtype(std::string_view name) {
  for (DType t : {DType::f64, DType::f32, DType::bf16, DType::u8, DType::i32, DType::i64})
    if (dtype_name(t) == name) return t;
  throw Error("unknown dtype '" + std::string(name) + "' (expected f64, f32, bf16, u8, i32 or i64)");
}

}  // namespace rcts
