// A dump's parameters are exactly the config's on its rank: names, order, shapes and
// dtypes. A dump holding one of twelve parameters, or a [1] or [0] parameter, agrees with
// itself in every comparison of its runs; `rcts check` must refuse it without
// --reference-tolerance (dump_check.hpp).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include <nlohmann/json.hpp>

#include "tests/harness/test_tensors.hpp"
#include "tests/support/dump_dir.hpp"
#include "tests/support/dump_source.hpp"

namespace rcts::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ScratchDir;
using test_support::put_tensor;

// One layer, two micro-batches.
const RunRecord& small_run() { return test_support::dump_run(2); }

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

Tensor zeros(const Shape& s, DType d) {
  Tensor t = testing::make_tensor(s, d, "t");
  if (t.numel()) std::memset(t.bytes(), 0, static_cast<size_t>(t.nbytes()));
  return t;
}

// The dump of small_run() edited by `edit`, as `rcts check` takes it: read and matched
// with the case's config on rank 0 of one. "" when accepted.
std::string check_error(const fs::path& dir, const std::function<void(json&)>& edit) {
  test_support::write_edited_dump(dir, small_run(), edit);
  return test_support::dump_check_error(dir, small_run().config);
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
         for (json* l : parameter_lists(j)) put_tensor(d, (*l)[2], zeros({1}, DType::f32));
       },
       "/parameters/2 ('layers.0.attention.qkv.weight'): shape [1], the config's is [48, 16] on this rank"},
      {"a [0] parameter",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put_tensor(d, (*l)[9], zeros({0}, DType::f32));
       },
       "/parameters/9 ('layers.0.mlp.fc1.bias'): shape [0], the config's is [32] on this rank"},
      {"a transposed weight",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put_tensor(d, (*l)[8], zeros({16, 32}, DType::f32));
       },
       "/parameters/8 ('layers.0.mlp.fc1.weight'): shape [16, 32], the config's is [32, 16] on this rank"},
      {"f64 parameters of an f32 run",
       [&](json& j) {
         for (json* l : parameter_lists(j)) put_tensor(d, (*l)[0], zeros({16}, DType::f64));
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
       [&](json& j) { put_tensor(d, j["steps"][0]["params_before"][3], zeros({1}, DType::f32)); },
       "/steps/0/params_before/3 ('layers.0.attention.qkv.bias'): shape [1], the config's is [48] on this rank"},
      {"a micro-batch's gradient smaller",
       [&](json& j) { put_tensor(d, j["micro_batches"][1]["param_grads"][4], zeros({1}, DType::f32)); },
       "/micro_batches/1/param_grads/4 ('layers.0.attention.proj.weight.grad'): shape [1], the config's is [16, 16] "
       "on this rank"},
  };
  ASSERT_EQ(want.size(), 12u);
  for (const auto& row : rows) EXPECT_EQ(check_error(d, row.edit), manifest + row.error) << row.label;
}

}  // namespace
}  // namespace rcts::harness
