// Bitwise tensor comparison (design §10): two tensors are equal only if every byte is.
// On a mismatch the result says where and by how much, so a failure leaves a readable
// artefact: count, first mismatches side by side, the worst element, its ulp distance.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"

namespace rcts::harness {

// One differing element, as raw bits (zero-extended to 64 bits).
struct DiffElement {
  int64_t index = -1;
  uint64_t expected_bits = 0, actual_bits = 0;
  uint64_t ulp = 0;
};

struct BitwiseDiff {
  std::string name;         // the expected tensor's name
  std::string actual_name;  // the actual tensor's name
  DType dtype = DType::f32;
  Shape shape;
  // Non-empty when shape or dtype differ; then no element was compared.
  std::string layout_mismatch;

  bool equal = true;
  int64_t numel = 0;
  int64_t differing = 0;

  int64_t first_index = -1;    // flat row-major index, -1 when equal
  std::string first_index_nd;  // e.g. "[1, 0, 3]"
  std::string expected_hex, actual_hex;  // e.g. "0x3f800000"
  double expected_value = 0, actual_value = 0;
  // Floating types: distance between the values mapped to ordered integers (so -0 and
  // +0 are 1 apart, the largest finite and inf are 1 apart); a pair involving NaN gets
  // UINT64_MAX. Integer types: |expected - actual|.
  uint64_t ulp_distance = 0;

  int64_t worst_index = -1;  // first element with the largest ulp distance
  std::string worst_index_nd;
  uint64_t worst_ulp = 0;
  DiffElement worst;

  std::vector<DiffElement> first_mismatches;  // up to kShownMismatches, in index order

  static constexpr size_t kShownMismatches = 8;

  // Multi-line report; one line when equal.
  std::string message() const;
};

// Compares raw bytes element by element. Throws rcts::Error naming a tensor that is
// undefined or released; a shape/dtype difference is a mismatch result, not an error.
BitwiseDiff compare_bitwise(const Tensor& expected, const Tensor& actual);

// Ordered-integer distance of two values of a dtype given as raw bits (see ulp_distance).
uint64_t ulp_distance(DType dtype, uint64_t a_bits, uint64_t b_bits);

// "[i, j, k]" for a flat row-major index into shape.
std::string unravel_index(const Shape& shape, int64_t flat);

// Raw bits as zero-padded hex of the dtype's width, e.g. "0x3f80" for bf16 1.0.
std::string bits_hex(DType dtype, uint64_t bits);
// The value as decimal: %.9g for f32/bf16, %.17g for f64, exact for integer types.
std::string bits_decimal(DType dtype, uint64_t bits);
// The value widened to double (exact except for i64 beyond 2^53).
double bits_value(DType dtype, uint64_t bits);

}  // namespace rcts::harness
