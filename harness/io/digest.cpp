// sha256 via OpenSSL EVP and the tensor digest used by golden files and dumps.
#include "harness/io/digest.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

namespace rcts::harness {

// Golden hashes are of little-endian bytes; on a big-endian host raw bytes would differ.
static_assert(std::endian::native == std::endian::little, "rcts digests assume a little-endian host");

namespace {
std::string hex_of(const unsigned char* md, unsigned int len) {
  static const char* hex = "0123456789abcdef";
  std::string out(2 * len, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 0xf];
  }
  return out;
}
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1) {
    EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
    throw Error("sha256: OpenSSL EVP_DigestInit_ex failed");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(const void* data, size_t n) {
  if (n && EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) != 1)
    throw Error("sha256 of " + std::to_string(n) + " bytes failed in OpenSSL EVP_DigestUpdate");
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len) != 1 || len != 32)
    throw Error("sha256: OpenSSL EVP_DigestFinal_ex failed");
  return hex_of(md, len);
}

std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest reads nothing when n == 0, but it still wants a valid pointer.
  static const unsigned char empty = 0;
  if (EVP_Digest(n ? data : &empty, n, md, &len, EVP_sha256(), nullptr) != 1 || len != 32)
    throw Error("sha256 of " + std::to_string(n) + " bytes failed in OpenSSL EVP_Digest");
  return hex_of(md, len);
}

namespace {
TensorStats compute_stats(const Tensor& t) {
  TensorStats s;
  const std::vector<double> v = to_vector<double>(t);
  int64_t finite = 0;
  double sum = 0, sumsq = 0;
  for (double x : v) {
    if (std::isnan(x)) { ++s.nan_count; continue; }
    if (std::isinf(x)) { ++s.inf_count; continue; }
    s.min = finite ? std::min(s.min, x) : x;
    s.max = finite ? std::max(s.max, x) : x;
    sum += x;
    sumsq += x * x;
    ++finite;
  }
  if (finite) {
    s.mean = sum / static_cast<double>(finite);
    s.l2 = std::sqrt(sumsq);
  }
  return s;
}
}  // namespace

TensorDigest digest_tensor(const Tensor& t) {
  RCTS_CHECK(t.defined(), "digest of tensor '" + t.name() + "': tensor is undefined");
  TensorDigest d;
  d.name = t.name();
  d.shape = t.shape();
  d.dtype = std::string(dtype_name(t.dtype()));
  d.numel = t.numel();
  d.sha256 = sha256_hex(t.bytes(), static_cast<size_t>(t.nbytes()));
  d.stats = compute_stats(t);
  return d;
}

bool same_bits(const TensorDigest& a, const TensorDigest& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.sha256 == b.sha256;
}

void to_json(nlohmann::json& j, const TensorDigest& d) {
  j = nlohmann::json{{"name", d.name},
                     {"shape", d.shape},
                     {"dtype", d.dtype},
                     {"numel", d.numel},
                     {"sha256", d.sha256},
                     {"stats",
                      {{"min", d.stats.min},
                       {"max", d.stats.max},
                       {"mean", d.stats.mean},
                       {"l2", d.stats.l2},
                       {"nan", d.stats.nan_count},
                       {"inf", d.stats.inf_count}}}};
}

namespace {
// Reads j[key] as T, or throws an Error naming the key path.
template <typename T> T get_key(const nlohmann::json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw Error(where + ": missing key '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": key '" + key + "' has the wrong type (" + e.what() + ")");
  }
}
}  // namespace

void from_json(const nlohmann::json& j, TensorDigest& d) {
  const std::string where = "tensor digest" + (j.is_object() && j.contains("name") && j["name"].is_string()
                                                   ? " '" + j["name"].get<std::string>() + "'"
                                                   : std::string());
  d.name = get_key<std::string>(j, "name", where);
  d.shape = get_key<Shape>(j, "shape", where);
  const auto dtype = get_key<std::string>(j, "dtype", where);
  try {
    d.dtype = std::string(dtype_name(parse_dtype(dtype)));
  } catch (const Error& e) {
    throw Error(where + ": key 'dtype': " + e.message());
  }
  d.numel = get_key<int64_t>(j, "numel", where);
  d.sha256 = get_key<std::string>(j, "sha256", where);
  RCTS_CHECK(d.sha256.size() == 64 && d.sha256.find_first_not_of("0123456789abcdef") == std::string::npos,
             where + ": key 'sha256' is not 64 lower-case hex digits");
  RCTS_CHECK(shape_numel(d.shape) == d.numel,
             where + ": numel " + std::to_string(d.numel) + " does not match shape " + shape_str(d.shape));
  const auto stats = get_key<nlohmann::json>(j, "stats", where);
  const std::string swhere = where + " stats";
  d.stats.min = get_key<double>(stats, "min", swhere);
  d.stats.max = get_key<double>(stats, "max", swhere);
  d.stats.mean = get_key<double>(stats, "mean", swhere);
  d.stats.l2 = get_key<double>(stats, "l2", swhere);
  d.stats.nan_count = get_key<int64_t>(stats, "nan", swhere);
  d.stats.inf_count = get_key<int64_t>(stats, "inf", swhere);
}

}  // namespace rcts::harness
