// A dump's parameters are exactly the config's on its rank: names, order, shapes and
// dtypes. A dump holding one of twelve parameters, or a [1] or [0] parameter, agrees with
// itself in every comparison of its runs; `rcts check` must refuse it without
// --reference-tolerance (dump_check.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.hpp"
#include "harness/dumps/dump_v1.hpp"
#include "harness/io/digest.hpp"
#include "harness/io/npy.hpp"
#include "harness/run/dump_check.hpp"
#include "tests/harness/test_tensors.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;

const RunRecord& small_run() {
  static const RunRecord r = [] {
    Config c;
    c.model.num_layers = 1;
    c.model.hidden_size = 16;
    c.model.num_attention_heads = 2;
    c.model.seq_length = 8;
    c.model.ffn_hidden_size = 32;
    c.run.micro_batches = 2;
    ExecuteOptions eo;
    eo.record_all = true;
    return execute(c, cpu::default_backend(), {}, nullptr, eo);
  }();
  return r;
}

// The parameters of one dense layer of hidden size 16, ffn 32, in the model's order.
const std::vector<std::pair<std::string, Shape>>& config_parameters() {
  static const std::vector<std::pair<std::string, Shape>> p = {
      {"layers.0.input_layernorm.weight", {16}}, {"layers.0.input_layernorm.bias", {16}},
      {"layers.0.attention.qkv.weight", {48, 16}}, {"layers.0.attention.qkv.bias", {48}},
      {"layers.0.attention.proj.weight", {16, 16}}, {"layers.0.attention.proj.bias", {16}},
      {"layers.0.pre_mlp_layernorm.weight", {16}}, {"layers.0.pre_mlp_layernorm.bias", {16}},
      {"layers.0.mlp.fc1.weight", {32, 16}}, {"layers.0.mlp.fc1.bias", {32}},
      {"layers.0.mlp.fc2.weight", {16, 32}}, {"layers.0.mlp.fc2.bias", {16}},
  };
  return p;
}

json read_manifest(const fs::path& dir) {
  std::ifstream in(dir / "dump.json");
  return json::parse(in);
}
void write_manifest(const fs::path& dir, const json& j) { std::ofstream(dir / "dump.json") << j.dump(1); }

// Every list of named parameter tensors in a manifest: /parameters, each step's
// params_before and grads, each micro-batch's param_grads.
std::vector<json*> parameter_lists(json& j) {
  std::vector<json*> out = {&j["parameters"]};
  for (auto& s : j["steps"]) {
    out.push_back(&s["params_before"]);
    out.push_back(&s["grads"]);
  }
  for (auto& m : j["micro_batches"]) out.push_back(&m["param_grads"]);
  return out;
}

// Rewrites entry `e` of the dump in `dir` to hold `t`, consistently (file, shape, dtype, sha256).
void put(const fs::path& dir, json& e, const Tensor& t) {
  const fs::path file = dir / e["file"].get<std::string>();
  fs::remove(file);
  write_npy(file, t);
  e["shape"] = t.shape();
  e["dtype"] = std::string(dtype_name(t.dtype()));
  e["sha256"] = sha256_hex(t.numel() ? t.bytes() : nullptr, static_cast<size_t>(t.nbytes()));
}

Tensor zeros(const Shape& s, DType d) {
  Tensor t = testing::make_tensor(s, d, "t");
  if (t.numel()) std::memset(t.bytes(), 0, static_cast<size_t>(t.nbytes()));
  return t;
}

// The dump of small_run() edited by `edit`, as `rcts check` takes it: read and matched
// with the case's config on rank 0 of one. "" when accepted.
std::string check_error(const fs::path& dir, const std::function<void(json&)>& edit) {
  fs::remove_all(dir);
  DumpMeta m;
  m.case_id = "test.case";
  m.run = "baseline";
  m.role = "baseline";
  write_dump(dir, m, small_run());
  json j = read_manifest(dir);
  edit(j);
  write_manifest(dir, j);
  const DumpGroup g{"test.case", "cpu", 1, {{{0, "baseline"}, dir}}};
  Case c;
  c.id = "test.case";
  try {
    DumpSource(g, 0).record(c, "baseline", small_run().config, {});
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(DumpParameters, TheWritersParametersAreTheConfigs) {
  ScratchDir dir;
  const auto& want = config_parameters();
  ASSERT_EQ(small_run().params.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(small_run().params[i].name, want[i].first) << i;
    EXPECT_EQ(small_run().params[i].tensor.shape(), want[i].second) << i;
    EXPECT_EQ(small_run().params[i].tensor.dtype(), DType::f32) << i;
  }
  EXPECT_EQ(check_error(dir.path() / "d", [](json&) {}), "");
}

TEST(DumpParameters, EveryParameterOfTheConfigAndNoOtherInItsShapeAndDtype) {
  ScratchDir dir;
  const fs::path d = dir.path() / "d";
  const std::string manifest = (d / "dump.json").string() + ": ";
  const auto& want = config_parameters();
  struct Row {
    std::string label;
    std::function<void(json&)> edit;
    std::string error;  // after "<manifest>: "
  };
  const std::vector<Row> rows = {
      {"1 of 12 parameters",
       [](json& j) {
         for (json* l : parameter_lists(j)) l->erase(l->begin() + 1, l->end());
       },
       "/parameters: 1 parameter(s), the config has 12 on this rank; missing 'layers.0.input_layernorm.bias', "
       "'layers.0.attention.qkv.weight', 'layers.0.attention.qkv.bias', 'layers.0.attention.proj.weight', ... (11)"},
      {"11 of 12: the last missing",
       [](json& j) {
         for (json* l : parameter_lists(j)) l->erase(l->end() - 1);
       },
       "/parameters: 11 parameter(s), the config has 12 on this rank; missing 'layers.0.mlp.fc2.bias'"},
      {"a [1] parameter",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put(d, (*l)[2], zeros({1}, DType::f32));
       },
       "/parameters/2 ('layers.0.attention.qkv.weight'): shape [1], the config's is [48, 16] on this rank"},
      {"a [0] parameter",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put(d, (*l)[9], zeros({0}, DType::f32));
       },
       "/parameters/9 ('layers.0.mlp.fc1.bias'): shape [0], the config's is [32] on this rank"},
      {"a transposed weight",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put(d, (*l)[8], zeros({16, 32}, DType::f32));
       },
       "/parameters/8 ('layers.0.mlp.fc1.weight'): shape [16, 32], the config's is [32, 16] on this rank"},
      {"f64 parameters of an f32 run",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put(d, (*l)[0], zeros({16}, DType::f64));
       },
       "/parameters/0 ('layers.0.input_layernorm.weight'): dtype f64, the config's parameters are f32"},
      {"two swapped",
       [](json& j) {
         for (json* l : parameter_lists(j)) std::swap((*l)[0], (*l)[1]);
       },
       "/parameters/0: named 'layers.0.input_layernorm.bias', the config's parameter at this position is "
       "'layers.0.input_layernorm.weight'"},
      {"one renamed",
       [](json& j) {
         for (json* l : parameter_lists(j)) {
           const bool grads = (*l)[11]["name"].get<std::string>().ends_with(".grad");
           (*l)[11]["name"] = grads ? "layers.0.mlp.out.bias.grad" : "layers.0.mlp.out.bias";
         }
       },
       "/parameters/11: named 'layers.0.mlp.out.bias', the config's parameter at this position is "
       "'layers.0.mlp.fc2.bias'"},
      {"one more",
       [](json& j) {
         for (json* l : parameter_lists(j)) {
           json extra = (*l)[11];
           const bool grads = extra["name"].get<std::string>().ends_with(".grad");
           extra["name"] = grads ? "layers.0.extra.bias.grad" : "layers.0.extra.bias";
           l->push_back(extra);
         }
       },
       "/parameters: 13 parameter(s), the config has 12 on this rank; not the config's 'layers.0.extra.bias'"},
      {"a step's parameter smaller",
       [&](json& j) { put(d, j["steps"][0]["params_before"][3], zeros({1}, DType::f32)); },
       "/steps/0/params_before/3 ('layers.0.attention.qkv.bias'): shape [1], the config's is [48] on this rank"},
      {"a micro-batch's gradient smaller",
       [&](json& j) { put(d, j["micro_batches"][1]["param_grads"][4], zeros({1}, DType::f32)); },
       "/micro_batches/1/param_grads/4 ('layers.0.attention.proj.weight.grad'): shape [1], the config's is [16, 16] "
       "on this rank"},
  };
  ASSERT_EQ(want.size(), 12u);
  for (const auto& row : rows) EXPECT_EQ(check_error(d, row.edit), manifest + row.error) << row.label;
}

}  // namespace
}  // namespace rcts::harness
