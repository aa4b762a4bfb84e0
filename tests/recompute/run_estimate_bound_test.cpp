// The run estimate errs high: for every recompute and offload mode, MoE and f64,
// the estimated parameter + activation bytes cover the device peak a real run
// measures, and the whole estimate is not absurdly above it (so the default limit
// does not refuse runs that would fit).
#include <gtest/gtest.h>

#include <functional>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/run_estimate.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

struct Mode {
  std::string name;
  std::function<void(Config&)> apply;
};

TEST(RunEstimateBound, CoversTheMeasuredDevicePeak) {
  const std::vector<Mode> modes = {
      {"none", [](Config&) {}},
      {"full_uniform", [](Config& c) {
         c.recompute.recompute_granularity = "full";
         c.recompute.recompute_method = "uniform";
         c.recompute.recompute_num_layers = 2;
       }},
      {"selective_all", [](Config& c) {
         c.recompute.recompute_granularity = "selective";
         c.recompute.recompute_modules = {"core_attn", "mlp", "layernorm"};
       }},
      {"swiglu_f64", [](Config& c) {
         c.model.activation = "swiglu";
         c.model.activation_dtype = DType::f64;
       }},
      {"moe_shared", [](Config& c) {
         c.model.num_moe_experts = 4;
         c.model.moe_shared_expert_intermediate_size = 32;
       }},
      {"gdn_hybrid", [](Config& c) {  // GDN layers wider than the hidden size (design §15)
         c.model.gated_delta_net = true;
         c.model.linear_attention_freq = 2;
         c.model.linear_key_head_dim = 16;
         c.model.linear_value_head_dim = 32;
         c.model.linear_num_key_heads = 2;
         c.model.linear_num_value_heads = 4;
         c.recompute.recompute_granularity = "selective";
         c.recompute.recompute_modules = {"gdn_norm_out", "layernorm"};
       }},
      {"long_sequence", [](Config& c) {  // the a*s^2*b tensors dominate
         c.model.num_layers = 2;
         c.model.hidden_size = 16;
         c.model.seq_length = 128;
       }},
      {"offload", [](Config& c) {
         c.offload.fine_grained_activation_offloading = true;
         c.offload.offload_modules = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"};
         c.offload.min_offloaded_tensor_size = 16;
       }},
  };
  for (const Mode& mode : modes) {
    SCOPED_TRACE(mode.name);
    Config c = test_support::dense({.layers = 4, .hidden = 32, .heads = 4, .seq = 32, .micro_batches = 2, .steps = 2});
    mode.apply(c);
    const RunEstimate e = estimate_run(c);
    const RunRecord r = run_cpu(c);
    const double peak = static_cast<double>(r.device_peak);
    EXPECT_GE(e.param_bytes + e.activation_bytes, peak);
    EXPECT_LT(e.bytes, 8 * peak);
  }
}

}  // namespace
}  // namespace rcts
