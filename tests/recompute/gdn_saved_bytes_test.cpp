// Measured saved-activation bytes of gated delta net layers against the analytic
// model (reference/memory_model/gdn_memory.hpp, design §15): per tensor of a GDN layer,
// a closed formula written from the design's tensor list, and per layer and backward
// peak under every recompute mode, for a hybrid model.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/core/saved_bytes.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/gdn_memory.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config hybrid() {
  Config c = test_support::tiny_dense(3, 1);
  c.model.gated_delta_net = true;
  c.model.linear_attention_pattern = {1, 0, 1};
  c.model.linear_conv_kernel_dim = 3;
  c.model.linear_key_head_dim = 4;
  c.model.linear_value_head_dim = 6;
  c.model.linear_num_key_heads = 2;
  c.model.linear_num_value_heads = 4;
  return c;
}

// layers.<i>.<name> -> <name>, first save of each storage only (the memory check's rule).
std::map<std::string, int64_t> per_tensor(const RunRecord& r, int layer) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  std::map<std::string, int64_t> out;
  for (const SaveRecord* s : distinct_forward_saves(r.saves, prefix)) out[s->key().substr(prefix.size())] += s->bytes;
  return out;
}

TEST(GdnSavedBytes, LayerIsTheClosedFormula) {
  // bf16, GeLU, ffn = 4h, dropout on. A GDN layer saves, in sb units of 2 bytes:
  // LN input h, in_proj input h, conv inputs 2Kq + Kv, rule inputs 2Kq + Kv + 2nv,
  // norm input and gate 2Kv, out_proj input Kv; then mask h/2, LN2 input h and the MLP
  // (fc1 input h, act and fc2 inputs 4h each, mask h/2).
  const Config c = hybrid();
  const RunRecord r = run_cpu(c);
  const int64_t sb = 16, h = 16, kq = 8, kv = 24, nv = 4;
  const int64_t want = 2 * sb * (h + h + 2 * kq + kv + 2 * kq + kv + 2 * nv + 3 * kv) + sb * h + 2 * sb * h +
                       2 * sb * (h + 8 * h) + sb * h;
  EXPECT_EQ(r.saved_bytes_per_layer[0][0], want);
  EXPECT_EQ(r.saved_bytes_per_layer[0][2], want);
  int64_t sum = 0;
  for (const auto& [k, v] : per_tensor(r, 0)) sum += v;
  EXPECT_EQ(sum, want);
}

TEST(GdnSavedBytes, ModelEqualsMeasurementPerLayerAndPeak) {
  const std::vector<std::vector<std::string>> selective = {
      {}, {"gdn_norm_out"}, {"gdn_norm_out", "layernorm"}, {"gdn_norm_out", "mlp"}, {"gdn_norm_out", "layernorm", "mlp", "core_attn"},
      {"layernorm"}, {"core_attn"}};
  std::vector<Config> configs;
  for (const auto& m : selective) {
    Config c = hybrid();
    c.recompute.recompute_granularity = "selective";
    c.recompute.recompute_modules = m;
    configs.push_back(c);
  }
  for (auto [method, n] : std::vector<std::pair<std::string, int>>{{"uniform", 2}, {"uniform", 3}, {"block", 1}, {"block", 2}}) {
    Config c = hybrid();
    c.recompute.recompute_granularity = "full";
    c.recompute.recompute_method = method;
    c.recompute.recompute_num_layers = n;
    configs.push_back(c);
  }
  Config none = hybrid();
  none.recompute.recompute_granularity.reset();
  configs.push_back(none);
  for (const Config& c : configs) {
    const std::string what = c.recompute.recompute_granularity.value_or("none") + " " +
                             c.recompute.recompute_method.value_or("") + " " +
                             std::to_string(c.recompute.recompute_num_layers.value_or(0)) + " [" +
                             (c.recompute.recompute_modules.empty() ? "" : c.recompute.recompute_modules.front()) + "..]";
    const RunRecord r = run_cpu(c);
    const StageMemory st = stage_memory(c);
    EXPECT_EQ(r.saved_bytes_per_layer[0], st.per_layer_bytes()) << what;
    EXPECT_EQ(r.saved_peaks.at(0), st.peak_backward_bytes) << what;
  }
}

}  // namespace
}  // namespace rcts
