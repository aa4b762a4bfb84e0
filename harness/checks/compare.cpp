// Bitwise tensor comparison with ulp distances and a readable mismatch report.
#include "harness/checks/compare.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

namespace rcts::harness {

namespace {

uint64_t load_bits(const std::byte* p, size_t width) {
  uint64_t v = 0;
  std::memcpy(&v, p, width);  // little-endian host: low bytes hold the element
  return v;
}

int bit_width(DType t) { return static_cast<int>(dtype_size(t)) * 8; }

bool is_nan_bits(DType t, uint64_t bits) {
  const int w = bit_width(t);
  const uint64_t sign = uint64_t{1} << (w - 1);
  const int mant = t == DType::f64 ? 52 : t == DType::f32 ? 23 : 7;
  const uint64_t exp_mask = (sign - 1) & ~((uint64_t{1} << mant) - 1);
  return (bits & exp_mask) == exp_mask && (bits & ((uint64_t{1} << mant) - 1)) != 0;
}

// Maps float bits to an unsigned key that is monotonic in the value: negatives are
// bit-inverted, positives get the sign bit set, so -0 < +0 are neighbours.
uint64_t ordered_key(DType t, uint64_t bits) {
  const int w = bit_width(t);
  const uint64_t sign = uint64_t{1} << (w - 1);
  const uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  return (bits & sign) ? (~bits & mask) : (bits | sign);
}

int64_t signed_value(DType t, uint64_t bits) {
  switch (t) {
    case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(bits));
    case DType::i64: return static_cast<int64_t>(bits);
    default: return static_cast<int64_t>(bits);  // u8
  }
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "0x3f800000 (1)" or "0x7fc00000 (nan)".
std::string describe(DType t, uint64_t bits) { return bits_hex(t, bits) + " (" + bits_decimal(t, bits) + ")"; }

std::string ulp_text(uint64_t ulp) {
  return ulp == std::numeric_limits<uint64_t>::max() ? std::string("NaN involved") : std::to_string(ulp);
}

}  // namespace

uint64_t ulp_distance(DType t, uint64_t a, uint64_t b) {
  if (a == b) return 0;
  if (is_floating(t)) {
    if (is_nan_bits(t, a) || is_nan_bits(t, b)) return std::numeric_limits<uint64_t>::max();
    const uint64_t ka = ordered_key(t, a), kb = ordered_key(t, b);
    return ka > kb ? ka - kb : kb - ka;
  }
  if (t == DType::i64) {  // the difference may not fit int64: subtract in unsigned
    const int64_t x = signed_value(t, a), y = signed_value(t, b);
    return x > y ? a - b : b - a;
  }
  const int64_t x = signed_value(t, a), y = signed_value(t, b);
  return static_cast<uint64_t>(x > y ? x - y : y - x);
}

std::string unravel_index(const Shape& shape, int64_t flat) {
  Shape idx(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) break;
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return shape_str(idx);
}

std::string bits_hex(DType t, uint64_t bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64, static_cast<int>(2 * dtype_size(t)), bits);
  return buf;
}

double bits_value(DType t, uint64_t bits) {
  switch (t) {
    case DType::f64: { double d; std::memcpy(&d, &bits, 8); return d; }
    case DType::f32: return bits_float(static_cast<uint32_t>(bits));
    case DType::bf16: return from_bf16(bf16{static_cast<uint16_t>(bits)});
    case DType::u8: case DType::i32: case DType::i64: return static_cast<double>(signed_value(t, bits));
  }
  return 0;
}

std::string bits_decimal(DType t, uint64_t bits) {
  switch (t) {
    case DType::f64: return format("%.17g", bits_value(t, bits));
    case DType::f32: case DType::bf16: return format("%.9g", bits_value(t, bits));
    case DType::u8: case DType::i32: case DType::i64: return std::to_string(signed_value(t, bits));
  }
  return "?";
}

BitwiseDiff compare_bitwise(const Tensor& expected, const Tensor& actual) {
  RCTS_CHECK(expected.defined(), "bitwise compare: expected tensor '" + expected.name() + "' is undefined");
  RCTS_CHECK(actual.defined(), "bitwise compare: actual tensor '" + actual.name() + "' is undefined");
  BitwiseDiff r;
  r.name = expected.name();
  r.actual_name = actual.name();
  r.dtype = expected.dtype();
  r.shape = expected.shape();
  r.numel = expected.numel();

  if (expected.dtype() != actual.dtype() || expected.shape() != actual.shape()) {
    r.equal = false;
    r.layout_mismatch = "expected " + std::string(dtype_name(expected.dtype())) + " " + shape_str(expected.shape()) +
                        ", actual " + std::string(dtype_name(actual.dtype())) + " " + shape_str(actual.shape());
    return r;
  }
  if (r.numel == 0) return r;

  const size_t w = dtype_size(r.dtype);
  const std::byte* e = expected.bytes();
  const std::byte* a = actual.bytes();
  if (std::memcmp(e, a, static_cast<size_t>(expected.nbytes())) == 0) return r;

  for (int64_t i = 0; i < r.numel; ++i) {
    const uint64_t eb = load_bits(e + i * w, w), ab = load_bits(a + i * w, w);
    if (eb == ab) continue;
    const DiffElement d{i, eb, ab, ulp_distance(r.dtype, eb, ab)};
    if (r.differing++ == 0 || d.ulp > r.worst.ulp) r.worst = d;
    if (r.first_mismatches.size() < BitwiseDiff::kShownMismatches) r.first_mismatches.push_back(d);
  }
  r.equal = false;
  const DiffElement& f = r.first_mismatches.front();
  r.first_index = f.index;
  r.first_index_nd = unravel_index(r.shape, f.index);
  r.expected_hex = bits_hex(r.dtype, f.expected_bits);
  r.actual_hex = bits_hex(r.dtype, f.actual_bits);
  r.expected_value = bits_value(r.dtype, f.expected_bits);
  r.actual_value = bits_value(r.dtype, f.actual_bits);
  r.ulp_distance = f.ulp;
  r.worst_index = r.worst.index;
  r.worst_index_nd = unravel_index(r.shape, r.worst.index);
  r.worst_ulp = r.worst.ulp;
  return r;
}

std::string BitwiseDiff::message() const {
  std::ostringstream os;
  os << "tensor '" << name << "'";
  if (!actual_name.empty() && actual_name != name) os << " (actual '" << actual_name << "')";
  if (!layout_mismatch.empty()) {
    os << ": shape/dtype mismatch: " << layout_mismatch;
    return os.str();
  }
  const std::string dt(dtype_name(dtype));
  if (equal) {
    os << ": bitwise equal (" << numel << " " << dt << " elements)";
    return os.str();
  }
  os << ": " << differing << " of " << numel << " " << dt << " elements differ bitwise, shape "
     << shape_str(shape) << "\n";
  os << "  first at " << first_index_nd << " (flat " << first_index << "): expected "
     << describe(dtype, first_mismatches.front().expected_bits) << ", actual "
     << describe(dtype, first_mismatches.front().actual_bits) << ", ulp " << ulp_text(ulp_distance) << "\n";
  os << "  worst at " << worst_index_nd << " (flat " << worst_index << "): expected "
     << describe(dtype, worst.expected_bits) << ", actual " << describe(dtype, worst.actual_bits) << ", ulp "
     << ulp_text(worst_ulp) << "\n";
  os << "  first mismatches:\n";
  for (const DiffElement& d : first_mismatches) {
    os << "    " << unravel_index(shape, d.index) << "  expected " << describe(dtype, d.expected_bits)
       << "  actual " << describe(dtype, d.actual_bits) << "  ulp " << ulp_text(d.ulp) << "\n";
  }
  if (differing > static_cast<int64_t>(first_mismatches.size()))
    os << "    ... " << differing - static_cast<int64_t>(first_mismatches.size()) << " more\n";
  std::string s = os.str();
  s.pop_back();  // no trailing newline: callers add their own
  return s;
}

}  // namespace rcts::harness
