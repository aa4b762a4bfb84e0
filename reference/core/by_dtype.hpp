// From a run-time element type to the C++ type: by_dtype(t, f) calls
// f.template operator()<T>() with T the element type of `t`, so a backend writes one
// templated lambda for an op over any dtype (conversions: by_dtype inside by_dtype).
#pragma once
#include <cstdint>

#include "kernels/common/bf16.hpp"
#include "reference/core/dtype.hpp"

namespace rcts {

template <typename F> void by_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f64: f.template operator()<double>(); break;
    case DType::f32: f.template operator()<float>(); break;
    case DType::bf16: f.template operator()<bf16>(); break;
    case DType::u8: f.template operator()<uint8_t>(); break;
    case DType::i32: f.template operator()<int32_t>(); break;
    case DType::i64: f.template operator()<int64_t>(); break;
  }
}

}  // namespace rcts
