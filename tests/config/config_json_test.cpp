// Config JSON: defaults, round trip, strictness (unknown keys, types, ranges) with
// messages naming the file, the JSON path and the value, and variant overrides.
#include <gtest/gtest.h>

#include "reference/config/config_json.hpp"
#include "reference/config/validate.hpp"

namespace rcts {
namespace {

using nlohmann::json;

// Parses and expects a ConfigError; returns it for further checks.
ConfigError parse_error(const json& j, const std::string& where = "cases/demo.json") {
  try {
    config_from_json(j, where);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return ConfigError("", "", "");
}

void expect_error(const json& j, const std::string& code, const std::string& path,
                  const std::vector<std::string>& in_message) {
  SCOPED_TRACE(j.dump());
  const ConfigError e = parse_error(j);
  EXPECT_EQ(e.code(), code) << e.message();
  EXPECT_EQ(e.path(), path) << e.message();
  EXPECT_NE(e.message().find("cases/demo.json"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  for (const auto& s : in_message) EXPECT_NE(e.message().find(s), std::string::npos) << e.message();
}

TEST(ConfigJson, EmptyObjectGivesDefaults) {
  EXPECT_EQ(config_to_json(config_from_json(json::object(), "x")), config_to_json(Config{}));
  EXPECT_EQ(config_to_json(config_from_json(json{{"model", json::object()}}, "x")), config_to_json(Config{}));
}

TEST(ConfigJson, RoundTripsEveryField) {
  Config c;
  c.model.num_layers = 7;
  c.model.activation = "swiglu";
  c.model.attention_dropout = 0.0;
  c.model.activation_dtype = DType::f64;
  c.model.layernorm_epsilon = 1e-6;
  c.model.flash_attention = true;
  c.parallel.tensor_model_parallel_size = 2;
  c.parallel.sequence_parallel = true;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 3;
  c.recompute.recompute_modules = {"layernorm", "mlp"};
  c.offload.offload_modules = {"attn_norm"};
  c.offload.min_offloaded_tensor_size = int64_t{1} << 40;
  c.run.seed = (uint64_t{1} << 63) + 5;  // beyond int64
  c.run.training = false;
  const json j = config_to_json(c);
  EXPECT_EQ(j["model"]["activation_dtype"], "f64");
  EXPECT_EQ(j["recompute"]["recompute_num_layers"], 3);
  const Config back = config_from_json(j, "x");
  EXPECT_EQ(config_to_json(back), j);
  EXPECT_EQ(back.run.seed, (uint64_t{1} << 63) + 5);
  EXPECT_EQ(back.recompute.recompute_method, "block");

  const json d = config_to_json(Config{});
  EXPECT_TRUE(d["recompute"]["recompute_granularity"].is_null());
  EXPECT_EQ(d["model"]["activation_dtype"], "bf16");
}

// The GDN layer pattern is a list of integers (design §15): it round-trips, and a
// non-integer entry or a non-list is an error naming its JSON path and value.
TEST(ConfigJson, GdnLayerPatternIsAnIntegerList) {
  const Config c = config_from_json(
      json::parse(R"({"model": {"num_layers": 3, "gated_delta_net": true, "linear_attention_pattern": [1, 0, 1]}})"), "x");
  EXPECT_EQ(c.model.linear_attention_pattern, (std::vector<int>{1, 0, 1}));
  EXPECT_TRUE(c.gdn_layer(0));
  EXPECT_FALSE(c.gdn_layer(1));
  EXPECT_TRUE(c.gdn_layer(2));
  EXPECT_EQ(config_to_json(c)["model"]["linear_attention_pattern"], json::parse("[1, 0, 1]"));
  expect_error(json::parse(R"({"model": {"linear_attention_pattern": [1, "0"]}})"), "json.type",
               "/model/linear_attention_pattern/1", {"expected an integer", "\"0\""});
  expect_error(json::parse(R"({"model": {"linear_attention_pattern": 1}})"), "json.type",
               "/model/linear_attention_pattern", {"array of integers"});
}

TEST(ConfigJson, OptionalsMayBeNullOrAbsent) {
  const Config c = config_from_json(
      json::parse(R"({"recompute": {"recompute_granularity": null, "recompute_method": null}})"), "x");
  EXPECT_FALSE(c.recompute.recompute_granularity);
  EXPECT_FALSE(c.recompute.recompute_num_layers);
}

TEST(ConfigJson, UnknownKeysAreRejectedWithTheirPath) {
  expect_error(json::parse(R"({"recompute": {"recompute_modulez": ["mlp"]}})"), "json.unknown_key",
               "/recompute/recompute_modulez", {"unknown key 'recompute_modulez'", "[\"mlp\"]", "recompute_modules"});
  expect_error(json::parse(R"({"modle": {}})"), "json.unknown_key", "/modle", {"unknown section 'modle'"});
  expect_error(json::parse(R"({"run": {"seed": 1, "seeds": 2}})"), "json.unknown_key", "/run/seeds", {"2"});
}

TEST(ConfigJson, WrongTypesAreRejectedWithPathAndValue) {
  expect_error(json::parse(R"({"model": {"hidden_size": "64"}})"), "json.type", "/model/hidden_size",
               {"expected an integer", "\"64\""});
  expect_error(json::parse(R"({"model": {"hidden_size": 64.0}})"), "json.type", "/model/hidden_size", {"64.0"});
  expect_error(json::parse(R"({"model": {"num_layers": null}})"), "json.type", "/model/num_layers", {"null"});
  expect_error(json::parse(R"({"model": {"flash_attention": 1}})"), "json.type", "/model/flash_attention",
               {"true or false"});
  expect_error(json::parse(R"({"model": {"hidden_dropout": "0.1"}})"), "json.type", "/model/hidden_dropout",
               {"expected a number"});
  expect_error(json::parse(R"({"recompute": {"recompute_modules": ["mlp", 3]}})"), "json.type",
               "/recompute/recompute_modules/1", {"expected a string", "3"});
  expect_error(json::parse(R"({"recompute": {"recompute_modules": "mlp"}})"), "json.type",
               "/recompute/recompute_modules", {"array"});
  expect_error(json::parse(R"({"recompute": {"recompute_num_layers": "2"}})"), "json.type",
               "/recompute/recompute_num_layers", {"\"2\""});
  expect_error(json::parse(R"({"parallel": [1, 2]})"), "json.type", "/parallel", {"expected an object"});
  expect_error(json::parse(R"([1])"), "json.type", "", {"config object"});
}

TEST(ConfigJson, ResourceLimitsAreRejectedWithPathAndValue) {
  expect_error(json::parse(R"({"model": {"num_layers": 1000000000}})"), "model.num_layers_limit", "/model/num_layers",
               {"= 1000000000", "<= 1024"});
  expect_error(json::parse(R"({"run": {"micro_batches": 1000000000}})"), "run.limit", "/run/micro_batches",
               {"= 1000000000", "<= 65536"});
  expect_error(json::parse(R"({"run": {"steps": 2147483647}})"), "run.limit", "/run/steps", {"= 2147483647"});
  expect_error(json::parse(R"({"offload": {"link_bandwidth_gbps": 1e-12}})"), "offload.link_bounds",
               "/offload/link_bandwidth_gbps", {"= 1e-12", ">= 0.01"});
  expect_error(json::parse(R"({"offload": {"link_latency_us": 1e9}})"), "offload.link_bounds",
               "/offload/link_latency_us", {"= 1e+09 must be <= 1e+05"});
}

TEST(ConfigJson, OutOfRangeValuesAreRejectedWithPathAndValue) {
  expect_error(json::parse(R"({"model": {"hidden_dropout": 1.5}})"), "model.dropout_range", "/model/hidden_dropout",
               {"1.5", "[0, 1)"});
  expect_error(json::parse(R"({"model": {"attention_dropout": 1}})"), "model.dropout_range",
               "/model/attention_dropout", {"= 1"});
  expect_error(json::parse(R"({"model": {"num_layers": -3}})"), "model.size_range", "/model/num_layers", {"-3"});
  expect_error(json::parse(R"({"model": {"seq_length": 0}})"), "model.size_range", "/model/seq_length", {"0"});
  expect_error(json::parse(R"({"model": {"num_layers": 4294967296}})"), "json.range", "/model/num_layers",
               {"4294967296"});
  expect_error(json::parse(R"({"run": {"seed": -1}})"), "json.range", "/run/seed", {"-1"});
  expect_error(json::parse(R"({"offload": {"min_offloaded_tensor_size": -5}})"), "offload.min_size_negative",
               "/offload/min_offloaded_tensor_size", {"-5"});
  expect_error(json::parse(R"({"model": {"activation_dtype": "fp16"}})"), "model.activation_dtype",
               "/model/activation_dtype", {"\"fp16\""});
  expect_error(json::parse(R"({"model": {"activation_dtype": "u8"}})"), "model.activation_dtype",
               "/model/activation_dtype", {"\"u8\""});
  expect_error(json::parse(R"({"recompute": {"recompute_granularity": "Full"}})"), "recompute.granularity",
               "/recompute/recompute_granularity", {"'Full'"});
  expect_error(json::parse(R"({"recompute": {"recompute_modules": ["core_attn", "attn"]}})"),
               "recompute.unknown_module", "/recompute/recompute_modules", {"'attn'"});
}

TEST(ConfigJson, CrossFieldRulesAreLeftToValidate) {
  // A case may load a deliberately invalid config and expect a rule code.
  const Config c = config_from_json(json::parse(R"({"recompute": {"recompute_granularity": "full"}})"), "x");
  const auto issues = validate(c);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].code, "recompute.full_needs_method");
}

TEST(ConfigJson, ApplyOverridesMergesKeyByKey) {
  Config base;
  base.model.num_layers = 4;
  base.recompute.recompute_granularity = "full";
  base.recompute.recompute_method = "uniform";
  base.recompute.recompute_num_layers = 2;
  const Config v = apply_overrides(
      base, json::parse(R"({"recompute": {"recompute_method": "block", "recompute_modules": ["mlp"]},
                           "run": {"steps": 3}})"),
      "variant block");
  EXPECT_EQ(v.model.num_layers, 4);
  EXPECT_EQ(v.recompute.recompute_granularity, "full");
  EXPECT_EQ(v.recompute.recompute_method, "block");
  EXPECT_EQ(v.recompute.recompute_num_layers, 2);
  EXPECT_EQ(v.recompute.recompute_modules, std::vector<std::string>{"mlp"});  // arrays replace
  EXPECT_EQ(v.run.steps, 3);

  const Config unset = apply_overrides(
      base, json::parse(R"({"recompute": {"recompute_granularity": null, "recompute_method": null,
                                          "recompute_num_layers": null}})"),
      "v");
  EXPECT_FALSE(unset.recompute.recompute_granularity);
  EXPECT_FALSE(unset.recompute.recompute_num_layers);
}

TEST(ConfigJson, ApplyOverridesIsEquallyStrict) {
  Config base;
  auto err = [&](const json& patch) -> ConfigError {
    try {
      apply_overrides(base, patch, "cases/demo.json#variant 2");
    } catch (const ConfigError& e) {
      return e;
    }
    ADD_FAILURE() << "no ConfigError for " << patch.dump();
    return ConfigError("", "", "");
  };
  ConfigError e = err(json::parse(R"({"offload": {"cpu_offload": true}})"));
  EXPECT_EQ(e.code(), "json.unknown_key");
  EXPECT_EQ(e.path(), "/offload/cpu_offload");
  EXPECT_NE(e.message().find("cases/demo.json#variant 2"), std::string::npos);
  e = err(json::parse(R"({"model": {"hidden_dropout": -0.5}})"));
  EXPECT_EQ(e.code(), "model.dropout_range");
  EXPECT_NE(e.message().find("-0.5"), std::string::npos) << e.message();
  e = err(json::parse(R"({"model": 3})"));
  EXPECT_EQ(e.code(), "json.type");
  EXPECT_EQ(e.path(), "/model");
  e = err(json::parse(R"({"extra": {}})"));
  EXPECT_EQ(e.code(), "json.unknown_key");
  e = err(json::parse(R"({"model": {"num_layers": null}})"));
  EXPECT_EQ(e.code(), "json.type");
  e = err(json::parse(R"("full")"));
  EXPECT_EQ(e.code(), "json.type");
}

}  // namespace
}  // namespace rcts
