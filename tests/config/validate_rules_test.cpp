// Every validation rule: a config that breaks it is rejected with its code, a nearby
// config passes, and the rule table covers every code all_rule_codes() lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "reference/config/validate.hpp"

namespace rcts {
namespace {

using Mutate = std::function<void(Config&)>;

struct Row {
  std::string code;
  Mutate bad;   // applied to a valid base: must produce `code`
  Mutate good;  // applied to a valid base: a nearby config that passes
};

void full_uniform(Config& c, int n) {
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = n;
}
void selective(Config& c, std::vector<std::string> modules) {
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = std::move(modules);
}
void moe(Config& c, int experts = 4) { c.model.num_moe_experts = experts; }
void gdn(Config& c) {
  c.model.gated_delta_net = true;
  c.model.linear_attention_freq = 2;
}
void fine_grained(Config& c, std::vector<std::string> modules) {
  c.offload.fine_grained_activation_offloading = true;
  c.offload.offload_modules = std::move(modules);
}

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      {"model.size_range", [](Config& c) { c.model.num_layers = 0; }, [](Config& c) { c.model.num_layers = 1; }},
      {"model.size_range", [](Config& c) { c.model.micro_batch_size = -2; },
       [](Config& c) { c.model.micro_batch_size = 1; }},
      {"model.activation", [](Config& c) { c.model.activation = "relu"; },
       [](Config& c) { c.model.activation = "swiglu"; }},
      {"model.activation_dtype", [](Config& c) { c.model.activation_dtype = DType::u8; },
       [](Config& c) { c.model.activation_dtype = DType::f64; }},
      {"model.dropout_range", [](Config& c) { c.model.hidden_dropout = 1.0; },
       [](Config& c) { c.model.hidden_dropout = 0.0; }},
      {"model.dropout_range", [](Config& c) { c.model.attention_dropout = -0.1; },
       [](Config& c) { c.model.attention_dropout = 0.999; }},
      {"model.layernorm_epsilon", [](Config& c) { c.model.layernorm_epsilon = 0.0; },
       [](Config& c) { c.model.layernorm_epsilon = 1e-12; }},
      {"model.moe_sizes", [](Config& c) { c.model.moe_router_topk = 0; },
       [](Config& c) { c.model.moe_router_topk = 1; }},
      {"parallel.size_range", [](Config& c) { c.parallel.pipeline_model_parallel_size = 0; },
       [](Config& c) { c.parallel.pipeline_model_parallel_size = 2; }},
      {"run.range", [](Config& c) { c.run.micro_batches = 0; }, [](Config& c) { c.run.micro_batches = 3; }},
      {"model.num_layers_limit", [](Config& c) { c.model.num_layers = 1000000000; },
       [](Config& c) { c.model.num_layers = 1024; }},
      {"run.limit", [](Config& c) { c.run.micro_batches = 1000000000; },
       [](Config& c) { c.run.micro_batches = 65536; }},
      {"run.limit", [](Config& c) { c.run.steps = 2147483647; }, [](Config& c) { c.run.steps = 65536; }},
      {"offload.link_bounds", [](Config& c) { c.offload.link_bandwidth_gbps = 1e-12; },
       [](Config& c) { c.offload.link_bandwidth_gbps = 0.01; }},
      {"offload.link_bounds", [](Config& c) { c.offload.link_latency_us = 1e9; },
       [](Config& c) { c.offload.link_latency_us = 1e5; }},
      {"recompute.granularity", [](Config& c) { c.recompute.recompute_granularity = "partial"; },
       [](Config& c) { c.recompute.recompute_granularity = "selective"; }},
      {"recompute.method", [](Config& c) { full_uniform(c, 1); c.recompute.recompute_method = "interleaved"; },
       [](Config& c) { full_uniform(c, 1); c.recompute.recompute_method = "block"; }},
      {"recompute.unknown_module", [](Config& c) { selective(c, {"core_attention"}); },
       [](Config& c) { selective(c, {"core_attn"}); }},
      {"recompute.duplicate_module", [](Config& c) { selective(c, {"mlp", "mlp"}); },
       [](Config& c) { selective(c, {"mlp"}); }},
      {"offload.unknown_module", [](Config& c) { fine_grained(c, {"attn_norm", "fc2"}); },
       [](Config& c) { fine_grained(c, {"attn_norm"}); }},
      {"offload.duplicate_module", [](Config& c) { fine_grained(c, {"mlp_norm", "mlp_norm"}); },
       [](Config& c) { fine_grained(c, {"mlp_norm"}); }},
      {"offload.min_size_negative", [](Config& c) { c.offload.min_offloaded_tensor_size = -1; },
       [](Config& c) { c.offload.min_offloaded_tensor_size = 0; }},
      {"mla.sizes", [](Config& c) { c.model.kv_lora_rank = 0; }, [](Config& c) { c.model.kv_lora_rank = 1; }},
      {"mla.sizes", [](Config& c) { c.model.q_lora_rank = -1; }, [](Config& c) { c.model.q_lora_rank = 0; }},
      {"mla.sizes", [](Config& c) { c.model.rotary_base = 1.0; }, [](Config& c) { c.model.rotary_base = 2.0; }},
      {"mla.pos_emb_dim_even",
       [](Config& c) { c.model.multi_latent_attention = true; c.model.qk_pos_emb_head_dim = 3; },
       [](Config& c) { c.model.multi_latent_attention = true; c.model.qk_pos_emb_head_dim = 2; }},
      {"model.hidden_divisible_by_heads", [](Config& c) { c.model.num_attention_heads = 5; },
       [](Config& c) { c.model.num_attention_heads = 8; }},
      {"parallel.sp_needs_tp", [](Config& c) { c.parallel.sequence_parallel = true; },
       [](Config& c) { c.parallel.sequence_parallel = true; c.parallel.tensor_model_parallel_size = 2; }},
      {"parallel.heads_divisible_by_tp", [](Config& c) { c.parallel.tensor_model_parallel_size = 8; },
       [](Config& c) { c.parallel.tensor_model_parallel_size = 4; }},
      {"parallel.ffn_divisible_by_tp", [](Config& c) { c.model.ffn_hidden_size = 250; c.parallel.tensor_model_parallel_size = 4; },
       [](Config& c) { c.model.ffn_hidden_size = 252; c.parallel.tensor_model_parallel_size = 4; }},
      {"parallel.seq_divisible_by_tp",
       [](Config& c) { c.model.seq_length = 15; c.parallel.tensor_model_parallel_size = 2; c.parallel.sequence_parallel = true; },
       [](Config& c) { c.model.seq_length = 15; c.parallel.tensor_model_parallel_size = 2; }},
      {"moe.topk_le_experts", [](Config& c) { moe(c, 2); c.model.moe_router_topk = 3; },
       [](Config& c) { moe(c, 2); c.model.moe_router_topk = 2; }},
      {"moe.experts_divisible_by_ep", [](Config& c) { moe(c, 6); c.parallel.expert_model_parallel_size = 4; },
       [](Config& c) { moe(c, 6); c.parallel.expert_model_parallel_size = 2; }},
      {"moe.expert_parallel_needs_moe", [](Config& c) { c.parallel.expert_tensor_parallel_size = 2; },
       [](Config& c) { moe(c); c.parallel.expert_tensor_parallel_size = 2; }},
      {"moe.shared_overlap_needs_shared", [](Config& c) { moe(c); c.model.moe_shared_expert_overlap = true; },
       [](Config& c) { moe(c); c.model.moe_shared_expert_overlap = true; c.model.moe_shared_expert_intermediate_size = 128; }},
      {"moe.ep_overlap_needs_ep", [](Config& c) { moe(c); c.model.overlap_moe_expert_parallel_comm = true; },
       [](Config& c) { moe(c); c.model.overlap_moe_expert_parallel_comm = true; c.parallel.expert_model_parallel_size = 2; }},
      {"recompute.full_needs_method", [](Config& c) { full_uniform(c, 1); c.recompute.recompute_method.reset(); },
       [](Config& c) { full_uniform(c, 1); }},
      {"recompute.num_layers_range", [](Config& c) { full_uniform(c, 0); }, [](Config& c) { full_uniform(c, 2); }},
      {"recompute.num_layers_range", [](Config& c) { full_uniform(c, 3); }, [](Config& c) { full_uniform(c, 1); }},
      {"recompute.num_layers_range", [](Config& c) { full_uniform(c, 1); c.recompute.recompute_num_layers.reset(); },
       [](Config& c) { full_uniform(c, 1); }},
      {"recompute.selective_forbids_num_layers", [](Config& c) { selective(c, {"core_attn"}); c.recompute.recompute_num_layers = 1; },
       [](Config& c) { selective(c, {"core_attn"}); }},
      {"recompute.selective_forbids_method", [](Config& c) { selective(c, {"core_attn"}); c.recompute.recompute_method = "block"; },
       [](Config& c) { selective(c, {}); }},
      {"recompute.options_need_granularity", [](Config& c) { c.recompute.recompute_method = "uniform"; },
       [](Config& c) { full_uniform(c, 1); }},
      {"recompute.options_need_granularity", [](Config& c) { c.recompute.recompute_num_layers = 1; },
       [](Config& c) { c.recompute.recompute_modules = {"mlp"}; }},
      {"recompute.moe_layer_recompute_vs_full", [](Config& c) { moe(c); full_uniform(c, 1); c.recompute.moe_layer_recompute = true; },
       [](Config& c) { moe(c); c.recompute.moe_layer_recompute = true; }},
      {"recompute.moe_needs_moe", [](Config& c) { selective(c, {"moe"}); }, [](Config& c) { moe(c); selective(c, {"moe"}); }},
      {"recompute.moe_needs_moe", [](Config& c) { c.recompute.moe_layer_recompute = true; },
       [](Config& c) { moe(c); c.recompute.moe_layer_recompute = true; }},
      {"recompute.mlp_needs_dense", [](Config& c) { moe(c); selective(c, {"mlp"}); }, [](Config& c) { selective(c, {"mlp"}); }},
      {"recompute.shared_experts_needs_shared", [](Config& c) { moe(c); selective(c, {"shared_experts"}); },
       [](Config& c) { moe(c); c.model.moe_shared_expert_intermediate_size = 128; selective(c, {"shared_experts"}); }},
      {"recompute.moe_act_needs_moe", [](Config& c) { c.model.moe_grouped_gemm = true; selective(c, {"moe_act"}); },
       [](Config& c) { moe(c); c.model.moe_grouped_gemm = true; selective(c, {"moe_act"}); }},
      {"recompute.moe_act_needs_grouped_gemm", [](Config& c) { moe(c); selective(c, {"moe_act"}); },
       [](Config& c) { moe(c); c.model.moe_grouped_gemm = true; selective(c, {"moe_act"}); }},
      {"recompute.mla_up_proj_needs_mla", [](Config& c) { selective(c, {"mla_up_proj"}); },
       [](Config& c) { c.model.multi_latent_attention = true; selective(c, {"mla_up_proj"}); }},
      {"recompute.gdn_norm_out_needs_gdn", [](Config& c) { selective(c, {"core_attn", "gdn_norm_out"}); },
       [](Config& c) { gdn(c); selective(c, {"core_attn", "gdn_norm_out"}); }},
      // Gated delta net (design §15).
      {"model.gdn_size_range", [](Config& c) { gdn(c); c.model.linear_conv_kernel_dim = 0; },
       [](Config& c) { gdn(c); c.model.linear_conv_kernel_dim = 1; }},
      {"model.gdn_size_range", [](Config& c) { c.model.linear_attention_freq = -1; },
       [](Config& c) { c.model.linear_attention_freq = 0; }},
      {"model.gdn_pattern_values", [](Config& c) { c.model.num_layers = 2; c.model.linear_attention_pattern = {1, 2}; },
       [](Config& c) { c.model.num_layers = 2; c.model.linear_attention_pattern = {1, 0}; }},
      {"model.gdn_pattern_missing", [](Config& c) { c.model.gated_delta_net = true; }, [](Config& c) { gdn(c); }},
      {"model.gdn_pattern_both", [](Config& c) { gdn(c); c.model.linear_attention_pattern = {1, 0}; },
       [](Config& c) { c.model.gated_delta_net = true; c.model.linear_attention_pattern = {1, 0}; }},
      {"model.gdn_pattern_length", [](Config& c) { c.model.gated_delta_net = true; c.model.linear_attention_pattern = {1}; },
       [](Config& c) { c.model.gated_delta_net = true; c.model.linear_attention_pattern = {0, 1}; }},
      {"model.gdn_value_heads_multiple", [](Config& c) { gdn(c); c.model.linear_num_value_heads = 24; },
       [](Config& c) { gdn(c); c.model.linear_num_value_heads = 48; }},
      {"model.gdn_heads_vs_tp",
       [](Config& c) { gdn(c); c.parallel.tensor_model_parallel_size = 4; c.model.linear_num_key_heads = 2; },
       [](Config& c) { gdn(c); c.parallel.tensor_model_parallel_size = 4; c.model.linear_num_key_heads = 4; }},
      {"recompute.shared_experts_vs_overlap",
       [](Config& c) { moe(c); c.model.moe_shared_expert_intermediate_size = 128; c.model.moe_shared_expert_overlap = true;
                       selective(c, {"shared_experts"}); },
       [](Config& c) { moe(c); c.model.moe_shared_expert_intermediate_size = 128; c.model.moe_shared_expert_overlap = true;
                       selective(c, {"moe"}); }},
      {"recompute.ep_overlap_vs_full",
       [](Config& c) { moe(c); c.parallel.expert_model_parallel_size = 2; c.model.overlap_moe_expert_parallel_comm = true;
                       full_uniform(c, 1); },
       [](Config& c) { moe(c); c.parallel.expert_model_parallel_size = 2; c.model.overlap_moe_expert_parallel_comm = true;
                       selective(c, {"core_attn"}); }},
      {"recompute.ep_overlap_vs_moe",
       [](Config& c) { moe(c); c.parallel.expert_model_parallel_size = 2; c.model.overlap_moe_expert_parallel_comm = true;
                       selective(c, {"moe"}); },
       [](Config& c) { moe(c); c.parallel.expert_model_parallel_size = 2; c.model.overlap_moe_expert_parallel_comm = true;
                       selective(c, {"moe_act", "shared_experts"}); c.model.moe_grouped_gemm = true;
                       c.model.moe_shared_expert_intermediate_size = 64; }},
      {"recompute.ep_overlap_vs_moe",  // through the deprecated alias
       [](Config& c) { moe(c); c.parallel.expert_model_parallel_size = 2; c.model.overlap_moe_expert_parallel_comm = true;
                       c.recompute.moe_layer_recompute = true; },
       [](Config& c) { moe(c); c.parallel.expert_model_parallel_size = 2; c.recompute.moe_layer_recompute = true; }},
      {"distribute.needs_tp", [](Config& c) { full_uniform(c, 1); c.recompute.distribute_saved_activations = true; },
       [](Config& c) { full_uniform(c, 1); c.recompute.distribute_saved_activations = true;
                       c.parallel.tensor_model_parallel_size = 2; }},
      {"distribute.needs_full",
       [](Config& c) { selective(c, {"core_attn"}); c.recompute.distribute_saved_activations = true;
                       c.parallel.tensor_model_parallel_size = 2; },
       [](Config& c) { full_uniform(c, 2); c.recompute.distribute_saved_activations = true;
                       c.parallel.tensor_model_parallel_size = 2; }},
      {"distribute.needs_method",
       [](Config& c) { full_uniform(c, 1); c.recompute.recompute_method.reset(); c.recompute.distribute_saved_activations = true;
                       c.parallel.tensor_model_parallel_size = 2; },
       [](Config& c) { full_uniform(c, 1); c.recompute.recompute_method = "block";
                       c.recompute.distribute_saved_activations = true; c.parallel.tensor_model_parallel_size = 2; }},
      {"distribute.excludes_sp",
       [](Config& c) { full_uniform(c, 1); c.recompute.distribute_saved_activations = true;
                       c.parallel.tensor_model_parallel_size = 2; c.parallel.sequence_parallel = true; },
       [](Config& c) { full_uniform(c, 1); c.parallel.tensor_model_parallel_size = 2; c.parallel.sequence_parallel = true; }},
      {"cpu_offloading.num_layers_range", [](Config& c) { c.offload.cpu_offloading = true; c.offload.cpu_offloading_num_layers = 2; },
       [](Config& c) { c.offload.cpu_offloading = true; c.offload.cpu_offloading_num_layers = 1; }},
      {"cpu_offloading.num_layers_range", [](Config& c) { c.offload.cpu_offloading = true; c.offload.cpu_offloading_num_layers = -1; },
       [](Config& c) { c.offload.cpu_offloading = true; c.offload.cpu_offloading_num_layers = 0; }},
      {"cpu_offloading.excludes_pp", [](Config& c) { c.offload.cpu_offloading = true; c.parallel.pipeline_model_parallel_size = 2; },
       [](Config& c) { c.offload.cpu_offloading = true; }},
      // design §16: num_layers is the whole model; recompute_num_layers counts per stage.
      {"pipeline.num_layers_divisible", [](Config& c) { c.model.num_layers = 3; c.parallel.pipeline_model_parallel_size = 2; },
       [](Config& c) { c.model.num_layers = 4; c.parallel.pipeline_model_parallel_size = 2; }},
      {"recompute.num_layers_range", [](Config& c) { c.model.num_layers = 4; c.parallel.pipeline_model_parallel_size = 2; full_uniform(c, 3); },
       [](Config& c) { c.model.num_layers = 4; c.parallel.pipeline_model_parallel_size = 2; full_uniform(c, 2); }},
      {"cpu_offloading.excludes_recompute", [](Config& c) { c.offload.cpu_offloading = true; selective(c, {}); },
       [](Config& c) { c.offload.cpu_offloading = true; c.recompute.recompute_modules = {"mlp"}; }},
      {"cpu_offloading.excludes_fine_grained", [](Config& c) { c.offload.cpu_offloading = true; fine_grained(c, {"attn_norm"}); },
       [](Config& c) { c.offload.cpu_offloading = true; c.offload.offload_modules = {"attn_norm"}; }},
      {"offload.modules_empty", [](Config& c) { fine_grained(c, {}); }, [](Config& c) { fine_grained(c, {"core_attn"}); }},
      {"offload.attn_proj_needs_core_attn", [](Config& c) { fine_grained(c, {"attn_proj", "mlp_norm"}); },
       [](Config& c) { fine_grained(c, {"attn_proj", "core_attn"}); }},
      {"offload.expert_module_needs_moe", [](Config& c) { fine_grained(c, {"moe_act"}); },
       [](Config& c) { moe(c); fine_grained(c, {"moe_act", "expert_fc1"}); }},
      // FP8 and CUDA graphs (design §12).
      {"fp8.format", [](Config& c) { c.model.fp8 = "e5m2"; }, [](Config& c) { c.model.fp8 = "hybrid"; }},
      {"fp8.recipe", [](Config& c) { c.model.fp8_recipe = "mxfp8"; },
       [](Config& c) { c.model.fp8_recipe = "tensorwise"; }},
      {"fp8.amax_compute_algo", [](Config& c) { c.model.fp8_amax_compute_algo = "mean"; },
       [](Config& c) { c.model.fp8_amax_compute_algo = "max"; }},
      {"fp8.amax_history_range", [](Config& c) { c.model.fp8_amax_history_len = 0; },
       [](Config& c) { c.model.fp8_amax_history_len = 4096; }},
      {"fp8.amax_history_range", [](Config& c) { c.model.fp8_margin = 33; }, [](Config& c) { c.model.fp8_margin = 32; }},
      {"cuda_graph.impl", [](Config& c) { c.model.cuda_graph_impl = "cudagraph"; },
       [](Config& c) { c.model.cuda_graph_impl = "local"; }},
      {"cuda_graph.scope_names",
       [](Config& c) { c.model.cuda_graph_impl = "local"; c.model.cuda_graph_scope = {"mlp", "mlp"}; },
       [](Config& c) { c.model.cuda_graph_impl = "local"; c.model.cuda_graph_scope = {"mlp", "attn"}; }},
      {"cuda_graph.scope_vs_impl", [](Config& c) { c.model.cuda_graph_scope = {"attn"}; },
       [](Config& c) { c.model.cuda_graph_impl = "transformer_engine"; c.model.cuda_graph_scope = {"attn"}; }},
      {"cuda_graph.full_recompute_needs_full_iteration",
       [](Config& c) { c.model.cuda_graph_impl = "local"; full_uniform(c, 1); },
       [](Config& c) { c.model.cuda_graph_impl = "full_iteration"; full_uniform(c, 1); }},
      {"cuda_graph.region_straddles_scope",
       [](Config& c) {
         moe(c);
         c.model.cuda_graph_impl = "transformer_engine";
         c.model.cuda_graph_scope = {"moe_preprocess"};
         selective(c, {"moe"});
       },
       [](Config& c) {  // the whole MoE layer captured: the region lies inside
         moe(c);
         c.model.cuda_graph_impl = "transformer_engine";
         c.model.cuda_graph_scope = {"moe"};
         selective(c, {"moe"});
       }},
      {"cuda_graph.region_straddles_scope",
       [](Config& c) {
         moe(c);
         c.model.cuda_graph_impl = "local";
         c.model.cuda_graph_scope = {"moe_router"};
         selective(c, {"moe", "core_attn"});
       },
       [](Config& c) {  // moe_act lies in the experts, wholly outside a router-only graph
         moe(c);
         c.model.moe_grouped_gemm = true;
         c.model.cuda_graph_impl = "local";
         c.model.cuda_graph_scope = {"moe_router", "attn"};
         selective(c, {"moe_act", "core_attn"});
       }},
      {"recompute.fp8_delayed_vs_output_discarding",
       [](Config& c) { c.model.fp8 = "e4m3"; selective(c, {"layernorm"}); },
       [](Config& c) { c.model.fp8 = "e4m3"; c.model.fp8_recipe = "tensorwise"; selective(c, {"layernorm"}); }},
      {"recompute.fp8_delayed_vs_output_discarding",
       [](Config& c) { moe(c); c.model.moe_grouped_gemm = true; c.model.fp8 = "hybrid"; selective(c, {"moe_act"}); },
       [](Config& c) { moe(c); c.model.moe_grouped_gemm = true; c.model.fp8 = "hybrid"; selective(c, {"moe"}); }},
  };
  return r;
}

bool has_code(const std::vector<ConfigIssue>& issues, const std::string& code) {
  return std::any_of(issues.begin(), issues.end(), [&](const ConfigIssue& i) { return i.code == code; });
}

std::string codes(const std::vector<ConfigIssue>& issues) {
  std::string s;
  for (const auto& i : issues) s += " [" + i.code + "] " + i.message + "\n";
  return s;
}

TEST(ValidateRules, DefaultConfigIsValid) { EXPECT_TRUE(validate(Config{}).empty()) << codes(validate(Config{})); }

TEST(ValidateRules, EveryRowRejectsWithItsCodeAndANearbyConfigPasses) {
  const auto known = all_rule_codes();
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.code);
    ASSERT_NE(std::find(known.begin(), known.end(), row.code), known.end()) << "row uses an unlisted code";
    Config bad;
    row.bad(bad);
    const auto issues = validate(bad);
    EXPECT_TRUE(has_code(issues, row.code)) << codes(issues);
    for (const auto& i : issues) {
      ASSERT_FALSE(i.fields.empty()) << i.code;
      // The message names the first field with its section.
      EXPECT_NE(i.message.find(i.fields.front()), std::string::npos) << i.message;
    }
    Config good;
    row.good(good);
    EXPECT_TRUE(validate(good).empty()) << codes(validate(good));
  }
}

TEST(ValidateRules, EveryRuleCodeIsExercised) {
  std::set<std::string> covered;
  for (const Row& row : rows()) covered.insert(row.code);
  const auto all = all_rule_codes();
  for (const auto& code : all) EXPECT_TRUE(covered.count(code)) << "no test row for rule " << code;
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size()) << "duplicate rule codes";
}

TEST(ValidateRules, CodesTheBriefNamesExist) {
  const auto all = all_rule_codes();
  for (const char* code :
       {"recompute.granularity", "recompute.full_needs_method", "recompute.num_layers_range",
        "recompute.selective_forbids_num_layers", "recompute.selective_forbids_method", "recompute.unknown_module",
        "recompute.moe_act_needs_grouped_gemm", "recompute.mla_up_proj_needs_mla", "recompute.gdn_norm_out_needs_gdn",
        "recompute.shared_experts_vs_overlap", "recompute.ep_overlap_vs_full", "recompute.ep_overlap_vs_moe",
        "recompute.moe_layer_recompute_vs_full", "distribute.needs_tp", "distribute.needs_full",
        "distribute.needs_method", "distribute.excludes_sp", "cpu_offloading.num_layers_range",
        "cpu_offloading.excludes_pp", "cpu_offloading.excludes_recompute", "cpu_offloading.excludes_fine_grained",
        "offload.modules_empty", "offload.unknown_module", "offload.attn_proj_needs_core_attn",
        "offload.min_size_negative"})
    EXPECT_NE(std::find(all.begin(), all.end(), code), all.end()) << code;
}

TEST(ValidateRules, NumLayersMessageNamesFieldsAndValues) {
  Config c;
  c.model.num_layers = 5;
  full_uniform(c, 0);
  const auto issues = validate(c);
  ASSERT_EQ(issues.size(), 1u) << codes(issues);
  EXPECT_EQ(issues[0].code, "recompute.num_layers_range");
  EXPECT_EQ(issues[0].message,
            "recompute.recompute_num_layers = 0 must be in [1, num_layers = 5] for recompute_granularity = full");
  EXPECT_EQ(issues[0].fields, (std::vector<std::string>{"recompute.recompute_num_layers", "model.num_layers"}));
}

TEST(ValidateRules, NumLayersEqualToStageLayersIsValid) {
  Config c;
  c.model.num_layers = 5;
  full_uniform(c, 5);
  EXPECT_TRUE(validate(c).empty());
  c.recompute.recompute_num_layers = 6;
  EXPECT_TRUE(has_code(validate(c), "recompute.num_layers_range"));
}

TEST(ValidateRules, IssuesComeInRuleOrder) {
  Config c;
  c.model.hidden_dropout = 2.0;                   // model.dropout_range (early)
  c.offload.fine_grained_activation_offloading = true;  // offload.modules_empty (last group)
  c.model.num_attention_heads = 3;                // model.hidden_divisible_by_heads (middle)
  const auto issues = validate(c);
  ASSERT_EQ(issues.size(), 3u) << codes(issues);
  EXPECT_EQ(issues[0].code, "model.dropout_range");
  EXPECT_EQ(issues[1].code, "model.hidden_divisible_by_heads");
  EXPECT_EQ(issues[2].code, "offload.modules_empty");
}

TEST(ValidateRules, ValidateOrThrowNamesWhereCodesAndFirstPath) {
  Config c;
  c.model.hidden_dropout = 2.0;
  c.offload.fine_grained_activation_offloading = true;
  try {
    validate_or_throw(c, "cases/x.json");
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.code(), "model.dropout_range");
    EXPECT_EQ(e.path(), "/model/hidden_dropout");
    EXPECT_EQ(e.issues().size(), 2u);
    const std::string m = e.message();
    EXPECT_NE(m.find("cases/x.json"), std::string::npos) << m;
    EXPECT_NE(m.find("[model.dropout_range] model.hidden_dropout = 2"), std::string::npos) << m;
    EXPECT_NE(m.find("[offload.modules_empty]"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(validate_or_throw(Config{}));
}

TEST(ValidateRules, FieldLevelSubsetOnlyHasSingleFieldRules) {
  Config c;
  c.model.num_attention_heads = 3;     // cross-field: not in validate_fields
  c.model.layernorm_epsilon = -1.0;    // field-level
  const auto issues = validate_fields(c);
  ASSERT_EQ(issues.size(), 1u) << codes(issues);
  EXPECT_EQ(issues[0].code, "model.layernorm_epsilon");
}

TEST(ValidateRules, Fp8AndGraphMessagesNameKeysAndValues) {
  Config c;
  c.model.fp8 = "e4m3";
  selective(c, {"core_attn", "layernorm"});
  auto issues = validate(c);
  ASSERT_EQ(issues.size(), 1u) << codes(issues);
  EXPECT_EQ(issues[0].message,
            "recompute.recompute_modules contains 'layernorm', which FP8 delayed scaling does not support "
            "(model.fp8 = e4m3, model.fp8_recipe = delayed)");
  c = Config{};
  c.model.cuda_graph_impl = "transformer_engine";
  full_uniform(c, 1);
  issues = validate(c);
  ASSERT_EQ(issues.size(), 1u) << codes(issues);
  EXPECT_NE(issues[0].message.find("recompute.recompute_granularity = full"), std::string::npos) << issues[0].message;
  EXPECT_NE(issues[0].message.find("model.cuda_graph_impl = transformer_engine"), std::string::npos);
  EXPECT_EQ(issues[0].fields, (std::vector<std::string>{"recompute.recompute_granularity", "model.cuda_graph_impl"}));
}

TEST(ValidateRules, SelectiveRecomputeInsideAWholeLayerGraphIsValid) {
  Config c;
  c.model.cuda_graph_impl = "local";  // no scope: the whole layer is captured
  selective(c, {"core_attn", "mlp", "layernorm"});
  EXPECT_TRUE(validate(c).empty()) << codes(validate(c));
}

TEST(ValidateRules, UnknownModulesAreRejectedEvenWithoutTheFeatureOn) {
  Config c;
  c.recompute.recompute_modules = {"attention"};  // granularity unset: still a typo
  EXPECT_TRUE(has_code(validate(c), "recompute.unknown_module"));
  Config o;
  o.offload.offload_modules = {"mlp"};  // 'mlp' is a recompute name, not an offload name
  EXPECT_TRUE(has_code(validate(o), "offload.unknown_module"));
}

TEST(EffectiveRecompute, MoeLayerRecomputeMeansSelectivePlusMoe) {
  RecomputeConfig r;
  r.moe_layer_recompute = true;
  RecomputeConfig e = effective_recompute(r);
  EXPECT_EQ(e.recompute_granularity, "selective");
  EXPECT_EQ(e.recompute_modules, (std::vector<std::string>{"core_attn", "moe"}));
  EXPECT_FALSE(e.moe_layer_recompute);

  r.recompute_modules = {"moe", "mlp"};
  EXPECT_EQ(effective_recompute(r).recompute_modules, (std::vector<std::string>{"moe", "mlp"}));

  RecomputeConfig off;
  EXPECT_FALSE(effective_recompute(off).recompute_granularity.has_value());
}

TEST(CheckSupported, DefaultDenseModelIsSupported) { EXPECT_TRUE(check_supported(Config{}).empty()); }

TEST(CheckSupported, EachFeatureIsGatedAndCanBeSwitchedOn) {
  struct Case {
    const char* what;
    Mutate use;
    bool Supported::*flag;
  };
  const std::vector<Case> cases = {
      {"moe", [](Config& c) { moe(c); }, &Supported::moe},
      {"mla", [](Config& c) { c.model.multi_latent_attention = true; }, &Supported::mla},
      {"gdn", [](Config& c) { c.model.gated_delta_net = true; }, &Supported::gdn},
      {"tp", [](Config& c) { c.parallel.tensor_model_parallel_size = 2; }, &Supported::tensor_parallel},
      {"pp", [](Config& c) { c.parallel.pipeline_model_parallel_size = 2; }, &Supported::pipeline_parallel},
      {"fine-grained", [](Config& c) { fine_grained(c, {"attn_norm"}); }, &Supported::fine_grained_offload},
      {"cpu_offloading", [](Config& c) { c.offload.cpu_offloading = true; }, &Supported::cpu_offloading},
      {"flash", [](Config& c) { c.model.flash_attention = true; }, &Supported::flash_attention},
      {"swiglu", [](Config& c) { c.model.activation = "swiglu"; }, &Supported::swiglu},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.what);
    Config c;
    k.use(c);
    Supported none = Supported::everything();
    none.*k.flag = false;
    const auto issues = check_supported(c, none);
    ASSERT_EQ(issues.size(), 1u);
    EXPECT_EQ(issues[0].code, kFeatureNotImplemented);
    EXPECT_NE(issues[0].message.find("does not implement"), std::string::npos);
    EXPECT_TRUE(check_supported(c, Supported::everything()).empty());
  }
}

// GDN layers run, also with fine-grained offload; with FP8 they are a named gap (design §15).
TEST(CheckSupported, GdnRunsWithFineGrainedOffloadButNotFp8) {
  Config c;
  gdn(c);
  selective(c, {"gdn_norm_out", "layernorm"});
  EXPECT_TRUE(check_supported(c).empty()) << check_supported(c).front().message;
  Config o = c;
  fine_grained(o, {"attn_norm", "mlp_norm"});
  EXPECT_TRUE(check_supported(o).empty()) << check_supported(o).front().message;
  Config f = c;
  f.model.fp8 = "e4m3";
  const auto issues = check_supported(f);
  ASSERT_FALSE(issues.empty());
  EXPECT_EQ(issues[0].code, kFeatureNotImplemented);
  EXPECT_EQ(issues[0].fields.front(), "model.fp8");
}

TEST(CheckSupported, SelectiveNamesNeedTheirModuleImplemented) {
  Config c;
  c.model.multi_latent_attention = true;
  selective(c, {"core_attn", "mla_up_proj"});
  ASSERT_TRUE(validate(c).empty());  // meaningful...
  Supported s = Supported::everything();
  s.mla = false;
  const auto issues = check_supported(c, s);  // ...but not runnable yet
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_NE(issues[1].message.find("recompute module 'mla_up_proj'"), std::string::npos) << issues[1].message;

  Config m;
  moe(m);
  m.recompute.moe_layer_recompute = true;  // alias: selective + moe
  Supported no_moe = Supported::everything();
  no_moe.moe = false;
  const auto mi = check_supported(m, no_moe);
  ASSERT_EQ(mi.size(), 2u);
  EXPECT_NE(mi[1].message.find("recompute module 'moe'"), std::string::npos);
}

TEST(CheckSupported, OrThrowCarriesTheCode) {
  Config c;
  c.parallel.tensor_model_parallel_size = 2;
  Supported without_tp;
  without_tp.tensor_parallel = false;
  try {
    check_supported_or_throw(c, without_tp, "case.json");
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.code(), "feature.not_implemented");
    EXPECT_EQ(e.path(), "/parallel/tensor_model_parallel_size");
    EXPECT_NE(e.message().find("case.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace rcts
