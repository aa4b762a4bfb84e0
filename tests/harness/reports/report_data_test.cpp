// The figures `rcts run --report` draws, from a real run of a tiny config, against
// numbers derived by hand from Korthikanti et al.'s table (activation_memory.hpp):
// L=2, s=4, b=1, h=8, a=2, ffn=32, GeLU, bf16 (d=2), dropout on, so sbh = 32 and
// as^2b = 32. Per layer: 34*sbh + 5*as^2b = 1088 + 160 = 1248 bytes. The Chrome trace
// of an offload run is parsed back and its copies add up to the bytes moved.
#include <gtest/gtest.h>

#include <map>

#include "harness/reports/html_report.hpp"
#include "harness/reports/report_data.hpp"
#include "harness/reports/trace_json.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts::harness {
namespace {

Config tiny() {
  Config c = test_support::dense({.hidden = 8, .seq = 4, .micro_batch = 1, .ffn = 32, .micro_batches = 2});
  c.model.activation = "gelu";
  c.model.activation_dtype = DType::bf16;
  c.model.attention_dropout = 0.1;
  c.model.hidden_dropout = 0.1;
  return c;
}

// One layer's saves by module, by hand: d*sbh = 64, d*as^2b = 64, masks 1 byte per element.
const std::map<std::string, int64_t> kLayerByHand = {
    {"input_layernorm", 64},  {"attention.qkv", 64},     {"attention", 3 * 64},  // q, k, v
    {"attention.softmax", 64}, {"attention.dropout", 32 + 64},                   // mask + output
    {"attention.proj", 64},   {"attention.hidden_dropout", 32},                  // its mask
    {"pre_mlp_layernorm", 64}, {"mlp.fc1", 64},          {"mlp.act", 2 * 4 * 32},
    {"mlp.fc2", 2 * 4 * 32},  {"mlp.hidden_dropout", 32}};
// What core_attn recompute drops from a layer: the s^2 tensors.
constexpr int64_t kCoreAttnS2 = 64 + 32 + 64;
// What the core_attn offload group of one layer holds: q, k, v and the s^2 tensors.
constexpr int64_t kCoreAttnGroup = 3 * 64 + kCoreAttnS2;

int64_t seq_of(const TimelineRecord& t, const std::string& label) {
  for (const auto& m : t.marks)
    if (m.label == label) return m.seq;
  ADD_FAILURE() << "no mark '" << label << "'";
  return 0;
}

TEST(ReportData, ModuleOfDropsLayerAndTensor) {
  EXPECT_EQ(module_of("layers.3.attention.q"), "attention");
  EXPECT_EQ(module_of("layers.12.mlp.fc1.input"), "mlp.fc1");
  EXPECT_EQ(module_of("checkpoint.input"), "checkpoint");
}

TEST(ReportData, PerLayerAndPerModuleBytesMatchTheHandDerivedTable) {
  const RunRecord r = test_support::run_cpu(tiny());
  const RunPicture p = picture_of(r, "baseline", 0);
  EXPECT_EQ(p.layer_measured, (std::vector<int64_t>{1248, 1248}));
  EXPECT_EQ(p.layer_model, (std::vector<int64_t>{1248, 1248}));
  ASSERT_TRUE(p.model_peak.has_value());
  EXPECT_EQ(*p.model_peak, 2 * 1248);  // no recompute: everything stored is held at once
  std::map<std::string, int64_t> measured, model;
  for (const auto& m : p.modules) {
    measured[m.module] = m.measured;
    ASSERT_TRUE(m.model.has_value()) << m.module;
    model[m.module] = *m.model;
  }
  std::map<std::string, int64_t> two_layers;
  for (const auto& [k, v] : kLayerByHand) two_layers[k] = 2 * v;
  EXPECT_EQ(measured, two_layers);
  EXPECT_EQ(model, two_layers);
}

TEST(ReportData, TimelinePeaksAtTheEndOfForwardAndEndsEmpty) {
  const RunRecord r = test_support::run_cpu(tiny());
  const TimelineRecord& t = r.timeline;
  ASSERT_FALSE(t.samples.empty());
  for (const char* mb : {"step 0 mb 0", "step 0 mb 1"}) {
    EXPECT_EQ(device_at(t, seq_of(t, std::string(mb) + " forward")), 0) << mb;
    EXPECT_EQ(device_at(t, seq_of(t, std::string(mb) + " backward")), 2 * 1248) << mb;
    EXPECT_EQ(device_at(t, seq_of(t, std::string(mb) + " end")), 0) << mb;
  }
  int64_t peak = 0;
  for (const auto& s : t.samples) peak = std::max(peak, s.device_bytes);
  EXPECT_EQ(peak, 2 * 1248);
  EXPECT_EQ(host_at(t, t.samples.back().seq + 1), 0);
}

TEST(ReportData, SelectiveCoreAttnDropsTheS2TensorsInBothFigures) {
  Config c = tiny();
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn"};
  const RunPicture p = picture_of(test_support::run_cpu(c), "core_attn", 0);
  EXPECT_EQ(p.layer_measured, (std::vector<int64_t>{1248 - kCoreAttnS2, 1248 - kCoreAttnS2}));
  EXPECT_EQ(p.layer_model, p.layer_measured);
  for (const auto& m : p.modules)
    if (m.module == "attention.softmax" || m.module == "attention.dropout") {
      EXPECT_EQ(m.measured, 0) << m.module;
      EXPECT_EQ(m.model.value_or(-1), 0) << m.module;
    }
}

Config offload_core_attn() {
  Config c = tiny();
  c.offload.fine_grained_activation_offloading = true;
  c.offload.offload_modules = {"core_attn"};
  c.offload.min_offloaded_tensor_size = 1;
  return c;
}

TEST(ReportData, OffloadMovesLayerZerosCoreAttentionToTheHost) {
  // Micro-batch 0 is warmup; in micro-batch 1 layer 1's group is the margin (its
  // backward runs first), so only layer 0's core attention goes to the host.
  const RunRecord r = test_support::run_cpu(offload_core_attn());
  const TimelineRecord& t = r.timeline;
  const int64_t warm = seq_of(t, "step 0 mb 0 backward"), moved = seq_of(t, "step 0 mb 1 backward");
  EXPECT_EQ(host_at(t, warm), 0);
  EXPECT_EQ(device_at(t, warm), 2 * 1248);
  EXPECT_EQ(host_at(t, moved), kCoreAttnGroup);
  EXPECT_EQ(device_at(t, moved), 2 * 1248 - kCoreAttnGroup);
  EXPECT_EQ(host_at(t, seq_of(t, "step 0 mb 1 end")), 0);
  const RunPicture p = picture_of(r, "offload", 0);
  EXPECT_TRUE(p.offload);
  EXPECT_FALSE(p.model_peak.has_value()) << "the model does not say where offload peaks";
}

TEST(ReportData, ChromeTraceHasEveryCopyOnItsStream) {
  const RunRecord r = test_support::run_cpu(offload_core_attn());
  const auto parsed = nlohmann::json::parse(chrome_trace("tiny", {picture_of(r, "offload", 0)}).dump());
  ASSERT_TRUE(parsed.at("traceEvents").is_array());
  int64_t d2h = 0, h2d = 0;
  int phases = 0;
  std::map<int, std::string> threads;
  for (const auto& e : parsed["traceEvents"]) {
    const std::string ph = e.at("ph");
    EXPECT_EQ(e.at("pid"), 0);
    if (ph == "M" && e["name"] == "thread_name") threads[e["tid"].get<int>()] = e["args"]["name"];
    if (ph != "X") continue;
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    EXPECT_GE(e.at("ts").get<double>(), 0.0);
    if (e["cat"] == "offload") (e["tid"] == 1 ? d2h : h2d) += e["args"]["bytes"].get<int64_t>();
    if (e["cat"] == "phase") ++phases;
  }
  EXPECT_EQ(threads[1], "d2h copy stream");
  EXPECT_EQ(threads[2], "h2d copy stream");
  EXPECT_EQ(d2h, kCoreAttnGroup);
  EXPECT_EQ(h2d, kCoreAttnGroup);
  EXPECT_EQ(phases, 4);  // forward and backward of two micro-batches
}

TEST(ReportData, PicturesSurviveTheirJsonRoundTrip) {
  const RunPicture p = picture_of(test_support::run_cpu(offload_core_attn()), "v", 3);
  const RunPicture q = picture_from_json(nlohmann::json::parse(to_json(p).dump()));
  EXPECT_EQ(to_json(q), to_json(p));
  EXPECT_EQ(q.rank, 3);
  EXPECT_EQ(q.timeline.copies.size(), p.timeline.copies.size());
}

TEST(ReportData, DownsampleKeepsBothPeaksAndBoundsTheCount) {
  std::vector<TimelineSample> s;
  for (int64_t i = 0; i < 10000; ++i) s.push_back({i, i == 7777 ? 1000 : i % 7, i == 4242 ? 500 : 0});
  const auto d = downsample(s, 100);
  EXPECT_LE(d.size(), 200u);
  int64_t dev = 0, host = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    dev = std::max(dev, d[i].device_bytes);
    host = std::max(host, d[i].host_bytes);
    if (i) {
      EXPECT_LT(d[i - 1].seq, d[i].seq);
    }
  }
  EXPECT_EQ(dev, 1000);
  EXPECT_EQ(host, 500);
}

TEST(ReportData, CasePageHoldsTheChartsAndNumbers) {
  CasePage page;
  page.result.id = "tiny";
  page.result.backend = "cpu";
  page.runs.push_back(picture_of(test_support::run_cpu(tiny()), "baseline", 0));
  page.runs.push_back(picture_of(test_support::run_cpu(offload_core_attn()), "offload <x>", 0));
  page.trace_file = "tiny.cpu.trace.json";
  const std::string html = case_page_html(page);
  EXPECT_NE(html.find("class='chart per-layer'"), std::string::npos);
  EXPECT_NE(html.find("class='chart per-module'"), std::string::npos);
  EXPECT_NE(html.find("data-bytes='1248'"), std::string::npos);
  EXPECT_NE(html.find("class='peak'"), std::string::npos);
  EXPECT_NE(html.find("class='host'"), std::string::npos);
  EXPECT_NE(html.find("offload &lt;x&gt;"), std::string::npos) << "labels are escaped";
  EXPECT_EQ(html.find("<script"), std::string::npos);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = html.find(what); at != std::string::npos; at = html.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("http"), count("http://www.w3.org/2000/svg")) << "nothing is fetched";
  EXPECT_EQ(count("<svg"), 4u) << "per layer, per module, a timeline per run";
  EXPECT_EQ(page_name("a.b", "cpu"), "a.b.cpu.html");
}

}  // namespace
}  // namespace rcts::harness
