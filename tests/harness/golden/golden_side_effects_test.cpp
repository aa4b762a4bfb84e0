// Side effects in golden files: written as hex bits, read back bit for bit, a one-ulp
// change of one aux loss named with both values, a file written before the field
// readable but failing check_golden (it cannot vouch for side effects), malformed
// values rejected naming the file, the JSON path and the value.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness/golden/golden.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;

RunRecord record(double aux) {
  RunRecord r;
  r.config.run.micro_batches = 1;
  r.losses = {0.25};
  r.side_effects = {{"layers.0.moe.aux_loss", aux}, {"layers.0.tokens_seen", 32.0}};
  return r;
}

Case a_case() {
  Case c;
  c.id = "x.side_effects";
  c.file = "cases/x/side_effects.json";
  return c;
}

bool has_line(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

TEST(GoldenSideEffects, RoundTripKeepsEveryBit) {
  const double aux = 0.1 + 1e-17;  // not a short decimal
  const Golden g = golden_of(a_case(), record(aux), "cpu");
  const nlohmann::json j = golden_to_json(g);
  EXPECT_EQ(j.at("side_effects").at("layers.0.moe.aux_loss"), double_hex_bits(aux));
  EXPECT_EQ(j.at("side_effects").at("layers.0.tokens_seen"), "0x4040000000000000");  // 32.0
  const Golden back = golden_from_json(nlohmann::json::parse(j.dump()), "mem");
  ASSERT_TRUE(back.side_effects);
  EXPECT_EQ(*back.side_effects, *g.side_effects);
  EXPECT_TRUE(golden_changes(back, g).empty());
}

TEST(GoldenSideEffects, OneUlpOfOneAuxLossIsNamed) {
  const double aux = 0.0421;
  const Golden want = golden_of(a_case(), record(aux), "cpu");
  const Golden got = golden_of(a_case(), record(std::nextafter(aux, 1.0)), "cpu");
  const auto changes = golden_changes(want, got);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("side effect layers.0.moe.aux_loss: " + double_hex_bits(aux)), std::string::npos)
      << changes[0];
  EXPECT_NE(changes[0].find("-> " + double_hex_bits(std::nextafter(aux, 1.0))), std::string::npos) << changes[0];
  Golden fewer = want;
  fewer.side_effects->erase("layers.0.tokens_seen");
  EXPECT_TRUE(has_line(golden_changes(want, fewer), "side effect layers.0.tokens_seen: removed"));
}

TEST(GoldenSideEffects, AFileWithoutTheFieldIsReadableAndFailsTheCheck) {
  nlohmann::json j = golden_to_json(golden_of(a_case(), record(0.5), "cpu"));
  j.erase("side_effects");
  const Golden old = golden_from_json(j, "old.json");
  EXPECT_FALSE(old.side_effects);
  const auto changes = golden_changes(old, golden_of(a_case(), record(0.5), "cpu"));
  EXPECT_EQ(changes.size(), 2u);
  EXPECT_TRUE(has_line(changes, "side effect layers.0.moe.aux_loss: new 0x3fe0000000000000 (0.5)"));

  const fs::path dir = fs::path(testing::TempDir()) / "rcts_golden_side_effects";
  fs::remove_all(dir);
  const fs::path file = golden_path(dir, "cpu", a_case().id);
  fs::create_directories(file.parent_path());
  std::ofstream(file) << j.dump(1);
  const CheckResult r = check_golden(a_case(), record(0.5), dir, "cpu");
  EXPECT_EQ(r.outcome, Outcome::fail);
  EXPECT_NE(r.detail.find("has no side_effects"), std::string::npos) << r.detail;
  j["side_effects"] = {{"layers.0.moe.aux_loss", double_hex_bits(0.5)}, {"layers.0.tokens_seen", double_hex_bits(32)}};
  std::ofstream(file) << j.dump(1);
  EXPECT_EQ(check_golden(a_case(), record(0.5), dir, "cpu").outcome, Outcome::pass);
  EXPECT_EQ(check_golden(a_case(), record(0.25), dir, "cpu").outcome, Outcome::fail);
  fs::remove_all(dir);
}

TEST(GoldenSideEffects, MalformedValuesNameFilePathAndValue) {
  nlohmann::json j = golden_to_json(golden_of(a_case(), record(0.5), "cpu"));
  for (const nlohmann::json& bad : {nlohmann::json(0.5), nlohmann::json("0x3fe"), nlohmann::json("0X3FE0000000000000")}) {
    j["side_effects"]["layers.0/aux"] = bad;
    try {
      golden_from_json(j, "golden/cpu/x.json");
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("golden/cpu/x.json"), std::string::npos) << m;
      EXPECT_NE(m.find("/side_effects/layers.0~1aux"), std::string::npos) << m;
      EXPECT_NE(m.find(bad.dump()), std::string::npos) << m;
    }
  }
  j["side_effects"] = nlohmann::json::array();
  EXPECT_THROW(golden_from_json(j, "golden/cpu/x.json"), Error);
}

}  // namespace
}  // namespace rcts::harness
