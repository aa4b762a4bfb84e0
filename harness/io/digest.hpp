// Tensor digests for golden files and dumps (design §10): the sha256 of a tensor's raw
// little-endian bytes decides equality; the summary stats only help a reader see *how*
// two tensors differ and never take part in a pass/fail decision.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "reference/core/tensor.hpp"

namespace rcts::harness {

// Lower-case hex sha256 of n bytes (OpenSSL EVP).
std::string sha256_hex(const void* data, size_t n);

// sha256 of bytes given in pieces (a file read in chunks): hex() equals sha256_hex of
// their concatenation.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex();  // ends the digest: call once

 private:
  void* ctx_;  // EVP_MD_CTX
};

// Stats over the finite values, computed in double; NaN and inf are only counted so
// that one NaN does not hide the range of the rest. All zero when nothing is finite.
struct TensorStats {
  double min = 0, max = 0, mean = 0, l2 = 0;
  int64_t nan_count = 0, inf_count = 0;
  bool operator==(const TensorStats&) const = default;
};

struct TensorDigest {
  std::string name;
  Shape shape;
  std::string dtype;   // dtype_name(), e.g. "bf16"
  std::string sha256;  // of the raw little-endian bytes
  int64_t numel = 0;
  TensorStats stats;
  bool operator==(const TensorDigest&) const = default;
};

// Throws rcts::Error naming the tensor when it is undefined or released.
TensorDigest digest_tensor(const Tensor& t);

// Same bits: shape, dtype and sha256 agree (name and stats are not compared).
bool same_bits(const TensorDigest& a, const TensorDigest& b);

void to_json(nlohmann::json& j, const TensorDigest& d);
// Throws rcts::Error naming the missing or malformed key.
void from_json(const nlohmann::json& j, TensorDigest& d);

}  // namespace rcts::harness
