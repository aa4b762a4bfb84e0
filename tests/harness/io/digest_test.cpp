// sha256 test vectors, tensor digest stability and JSON round trip.
#include "harness/io/digest.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

using testing::tensor_of;

TEST(Sha256, StandardVectors) {
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(TensorDigest, EqualTensorsEqualDigestsAndOneBitFlipChangesIt) {
  const std::vector<float> v{1.0f, -2.5f, 3.25f, 0.0f, 7.0f, -0.125f};
  const Tensor a = tensor_of<float>({2, 3}, v, "a");
  const Tensor b = tensor_of<float>({2, 3}, v, "a");
  Tensor c = tensor_of<float>({2, 3}, v, "a");
  reinterpret_cast<uint8_t*>(c.data<float>())[9] ^= 0x01;  // lowest mantissa bit of element 2

  const TensorDigest da = digest_tensor(a), db = digest_tensor(b), dc = digest_tensor(c);
  EXPECT_EQ(da, db);
  EXPECT_TRUE(same_bits(da, db));
  EXPECT_NE(da.sha256, dc.sha256);
  EXPECT_FALSE(same_bits(da, dc));
  // The digest is of the raw bytes, nothing else.
  EXPECT_EQ(da.sha256, sha256_hex(v.data(), v.size() * sizeof(float)));
}

TEST(TensorDigest, SameBitsDifferentShapeIsNotSame) {
  const std::vector<int32_t> v{1, 2, 3, 4};
  const TensorDigest a = digest_tensor(tensor_of<int32_t>({2, 2}, v, "x"));
  const TensorDigest b = digest_tensor(tensor_of<int32_t>({4}, v, "x"));
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_FALSE(same_bits(a, b));
}

TEST(TensorDigest, FieldsAndStats) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const TensorDigest d = digest_tensor(tensor_of<double>({5}, {3.0, nan, -4.0, inf, 1.0}, "stats"));
  EXPECT_EQ(d.name, "stats");
  EXPECT_EQ(d.shape, (Shape{5}));
  EXPECT_EQ(d.dtype, "f64");
  EXPECT_EQ(d.numel, 5);
  EXPECT_EQ(d.stats.nan_count, 1);
  EXPECT_EQ(d.stats.inf_count, 1);
  EXPECT_EQ(d.stats.min, -4.0);
  EXPECT_EQ(d.stats.max, 3.0);
  EXPECT_EQ(d.stats.mean, 0.0);
  EXPECT_DOUBLE_EQ(d.stats.l2, std::sqrt(26.0));
}

TEST(TensorDigest, Bf16HashesRawBits) {
  const std::vector<bf16> v{bf16{0x3f80}, bf16{0xc000}};  // 1.0, -2.0
  const TensorDigest d = digest_tensor(tensor_of<bf16>({2}, v, "h"));
  const uint8_t raw[] = {0x80, 0x3f, 0x00, 0xc0};  // little-endian
  EXPECT_EQ(d.sha256, sha256_hex(raw, sizeof raw));
  EXPECT_EQ(d.dtype, "bf16");
  EXPECT_EQ(d.stats.min, -2.0);
}

TEST(TensorDigest, ReleasedTensorNamesIt) {
  Tensor t = tensor_of<float>({1}, {1.0f}, "gone");
  t.storage()->release();
  try {
    digest_tensor(t);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("gone"), std::string::npos) << e.message();
  }
}

TEST(TensorDigest, JsonRoundTrip) {
  const TensorDigest d = digest_tensor(tensor_of<float>({3}, {0.1f, -0.2f, 0.3f}, "layers.0.fc1"));
  const nlohmann::json j = d;
  EXPECT_EQ(j.at("sha256"), d.sha256);
  EXPECT_EQ(j.at("shape"), nlohmann::json::array({3}));
  const TensorDigest back = nlohmann::json::parse(j.dump()).get<TensorDigest>();
  EXPECT_EQ(back, d);
}

TEST(TensorDigest, JsonErrorsNameTheKey) {
  nlohmann::json j = digest_tensor(tensor_of<float>({1}, {1.0f}, "w"));
  j.erase("sha256");
  try {
    (void)j.get<TensorDigest>();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'w'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("sha256"), std::string::npos) << e.message();
  }
  nlohmann::json bad = digest_tensor(tensor_of<float>({1}, {1.0f}, "w"));
  bad["dtype"] = "f16";
  EXPECT_THROW((void)bad.get<TensorDigest>(), Error);
}

}  // namespace
}  // namespace rcts::harness
