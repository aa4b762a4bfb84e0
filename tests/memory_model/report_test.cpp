// The memory report (JSON and text), with the realistic example of Korthikanti's
// scale: s=4096 b=2 h=4096 a=32 L=32, TP=2 with SP, selective core_attn.
#include <gtest/gtest.h>

#include <iostream>

#include "reference/config/config_error.hpp"
#include "reference/memory_model/report.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

Config realistic() {
  Config c = test_support::dense({.layers = 32, .hidden = 4096, .heads = 32, .seq = 4096, .ffn = 4 * 4096});
  c.parallel.tensor_model_parallel_size = 2;
  c.parallel.sequence_parallel = true;
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn"};
  return c;
}

TEST(MemoryReport, RealisticSizeNumbers) {
  const nlohmann::json j = memory_report_json(realistic());
  const int64_t sbh = int64_t{4096} * 2 * 4096;  // 32 Mi
  // TP=2 + SP, no recompute: sbh(34/2 + 5·32·4096/(4096·2)) = 97·sbh.
  EXPECT_EQ(j["layer"]["total"].get<int64_t>(), 97 * sbh);
  EXPECT_EQ(j["layer"]["selective"]["total"].get<int64_t>(), 17 * sbh);  // 34·sbh/t
  EXPECT_EQ(j["stage"]["stored_bytes"].get<int64_t>(), 32 * 17 * sbh);
  EXPECT_EQ(j["stage"]["peak_backward_bytes"].get<int64_t>(), 31 * 17 * sbh + 97 * sbh);
  const auto& v = j["variants"];
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0]["layer_bytes"].get<int64_t>(), 194 * sbh);  // 34 + 5as/h = 34 + 160
  EXPECT_EQ(v[1]["layer_bytes"].get<int64_t>(), 102 * sbh);  // 10 + 24/2 + 80
  EXPECT_EQ(v[3]["name"], "TP=2 + SP");
  EXPECT_EQ(v[3]["layer_bytes"].get<int64_t>(), 97 * sbh);
  EXPECT_EQ(v[4]["layer_bytes"].get<int64_t>(), 17 * sbh);
  EXPECT_EQ(v[5]["layer_bytes"].get<int64_t>(), sbh);        // 2·sbh/t
  EXPECT_DOUBLE_EQ(v[1]["sbh_coefficient"].get<double>(), 102.0);
  // k* = sqrt(L·A/c) = sqrt(32·97) ≈ 55.7 > L: one layer per segment is best.
  EXPECT_NEAR(j["checkpoint_optimum"]["k_star"].get<double>(), std::sqrt(32.0 * 97.0), 1e-9);
  EXPECT_EQ(j["checkpoint_optimum"]["k_best"], 32);
  EXPECT_DOUBLE_EQ(j["flops"]["full"]["step_ratio"].get<double>(), 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(j["flops"]["selective_core_attn"]["recompute_ratio"].get<double>(), 1.0 / 7.0);  // s = h
}

TEST(MemoryReport, RealisticSizeText) {
  const std::string text = memory_report_text(realistic());
  for (const char* s : {"input_layernorm.input", "attention.softmax.output", "mlp.hidden_dropout.mask",
                        "subtotal attention", "selective [core_attn]", "TP=2 + SP + selective core_attn",
                        "k* = sqrt(L*A/c)", "recompute/forward", "(checkpoint input)"})
    EXPECT_NE(text.find(s), std::string::npos) << s;
  std::cout << text;  // the example the docs quote
}

TEST(MemoryReport, FullUniformGroupsLayersInTheText) {
  Config c;
  c.model.num_layers = 6;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 4;
  const std::string text = memory_report_text(c);
  EXPECT_NE(text.find("chunk [0,4) input"), std::string::npos) << text;
  EXPECT_NE(text.find("1-3 "), std::string::npos) << text;  // layers 1..3 inside the chunk
  EXPECT_NE(text.find("chunk [4,6) input"), std::string::npos) << text;
  const auto j = memory_report_json(c);
  EXPECT_EQ(j["recompute"], "full uniform recompute_num_layers=4");
}

TEST(MemoryReport, InvalidConfigThrowsConfigError) {
  Config c;
  c.model.hidden_dropout = 1.0;
  EXPECT_THROW(memory_report_text(c), ConfigError);
}

}  // namespace
}  // namespace rcts
