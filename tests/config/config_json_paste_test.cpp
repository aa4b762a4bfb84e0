// Config JSON as people paste it: flat keys (TransformerConfig-style,
// no sections) map to their section, every problem is reported in one error, and a
// config without ffn_hidden_size gets Megatron-LM's default (4h; SwiGLU:
// int(4h * 2/3 / 64) * 64), computed here by hand.
#include <gtest/gtest.h>

#include "reference/config/config_error.hpp"
#include "reference/config/config_json.hpp"

namespace rcts {
namespace {

using nlohmann::json;

ConfigError error_of(const json& j) {
  try {
    config_from_json(j, "pasted.json");
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return ConfigError("", "", "");
}

TEST(ConfigJsonPaste, FlatKeysMapToTheirSections) {
  const Config c = config_from_json(json::parse(R"({"num_layers": 3, "hidden_size": 32, "num_attention_heads": 2,
      "tensor_model_parallel_size": 2, "recompute_granularity": "full", "recompute_method": "uniform",
      "recompute_num_layers": 1, "seed": 7, "model": {"seq_length": 8}})"),
                                    "pasted.json");
  EXPECT_EQ(c.model.num_layers, 3);
  EXPECT_EQ(c.model.hidden_size, 32);
  EXPECT_EQ(c.model.seq_length, 8);
  EXPECT_EQ(c.parallel.tensor_model_parallel_size, 2);
  EXPECT_EQ(c.recompute.recompute_granularity, "full");
  EXPECT_EQ(c.recompute.recompute_num_layers, 1);
  EXPECT_EQ(c.run.seed, 7u);
}

TEST(ConfigJsonPaste, EveryProblemInOneError) {
  const ConfigError e = error_of(json::parse(R"({"hiden_size": 64, "num_layers": "five",
      "model": {"seq_lenght": 4, "hidden_dropout": 2.0}, "run": {"steps": -1}})"));
  // The first problem keeps code and path (what config_error cases compare).
  EXPECT_EQ(e.code(), "json.unknown_key");
  EXPECT_EQ(e.path(), "/hiden_size");
  ASSERT_EQ(e.issues().size(), 5u) << e.message();
  for (const char* s : {"5 problems in pasted.json", "pasted.json: /hiden_size: unknown section 'hiden_size'",
                        "pasted.json: /num_layers: expected an integer (got \"five\")",
                        "pasted.json: /model/seq_lenght: unknown key 'seq_lenght'",
                        "pasted.json: /model/hidden_dropout = 2.0: ", "pasted.json: /run/steps = -1: "})
    EXPECT_NE(e.message().find(s), std::string::npos) << s << "\n" << e.message();
}

TEST(ConfigJsonPaste, AThousandProblemsShowFiftyAndCountTheRest) {
  json j = json::object();
  for (int i = 0; i < 1000; ++i) j["no_such_key_" + std::to_string(1000 + i)] = i;
  const ConfigError e = error_of(j);
  EXPECT_EQ(e.issues().size(), 1000u);
  EXPECT_NE(e.message().find("1000 problems in pasted.json"), std::string::npos);
  EXPECT_NE(e.message().find("no_such_key_1049"), std::string::npos);
  EXPECT_EQ(e.message().find("no_such_key_1050"), std::string::npos);
  EXPECT_NE(e.message().find("... and 950 more"), std::string::npos);
}

TEST(ConfigJsonPaste, AKeyGivenTwiceIsAnError) {
  const ConfigError e = error_of(json::parse(R"({"hidden_size": 32, "model": {"hidden_size": 64}})"));
  EXPECT_EQ(e.code(), "json.duplicate_key");
  EXPECT_NE(e.message().find("given twice"), std::string::npos) << e.message();
}

TEST(ConfigJsonPaste, FfnDefaultsToMegatrons) {
  auto ffn = [](const char* text) { return config_from_json(json::parse(text), "x").model.ffn_hidden_size; };
  EXPECT_EQ(ffn(R"({})"), 256);                                                    // 4 * 64
  EXPECT_EQ(ffn(R"({"model": {"hidden_size": 100, "num_attention_heads": 4}})"), 400);
  EXPECT_EQ(ffn(R"({"model": {"activation": "swiglu"}})"), 128);                  // int(170.67 / 64) * 64
  EXPECT_EQ(ffn(R"({"hidden_size": 1024, "num_attention_heads": 16, "activation": "swiglu"})"), 2688);
  EXPECT_EQ(ffn(R"({"model": {"hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 256}})"), 256);
  // A variant keeps its case's resolved size unless it names one.
  const Config base = config_from_json(json::parse(R"({"model": {"hidden_size": 32, "num_attention_heads": 2}})"), "x");
  EXPECT_EQ(apply_overrides(base, json::parse(R"({"model": {"hidden_size": 64}})"), "v").model.ffn_hidden_size, 128);
  EXPECT_EQ(apply_overrides(base, json::parse(R"({"hidden_dropout": 0.0})"), "v").model.hidden_dropout, 0.0);
}

TEST(ConfigJsonPaste, FfnDefaultOutOfRangeIsAnError) {
  const ConfigError e = error_of(json::parse(R"({"model": {"hidden_size": 1073741824}})"));  // 4h = 2^32
  EXPECT_EQ(e.path(), "/model/ffn_hidden_size");
  EXPECT_NE(e.message().find("4294967296, out of range"), std::string::npos) << e.message();
}

}  // namespace
}  // namespace rcts
