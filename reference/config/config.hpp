// One configuration object for a run: model, parallel layout, recompute, offload,
// seeds (design §7). Field names follow Megatron-LM's TransformerConfig where one
// exists. Validation lives in validate.hpp; JSON in config_json.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/core/dtype.hpp"

namespace rcts {

struct ModelConfig {
  int num_layers = 2;          // L, the whole model; a pipeline stage holds L / pp (design §16)
  int hidden_size = 64;        // h
  int num_attention_heads = 4; // a
  int seq_length = 16;         // s
  int micro_batch_size = 2;    // b
  int ffn_hidden_size = 256;   // ffn (4h by default)
  std::string activation = "gelu";  // "gelu" (tanh form) or "swiglu"
  double attention_dropout = 0.1;
  double hidden_dropout = 0.1;
  DType activation_dtype = DType::bf16;  // f64 turns on gradcheck mode (f64 params too)
  double layernorm_epsilon = 1e-5;
  bool flash_attention = false;  // memory model only: no s^2 term is saved
  // Megatron-LM's add_bias_linear (--disable-bias-linear turns it off): biases on the
  // attention's qkv and output projections and the dense MLP's fc1 and fc2. Experts and
  // shared experts have none either way (design §4).
  bool add_bias_linear = true;
  // Features that later issues implement; configs are judged from day one.
  int num_moe_experts = 0;       // 0: dense MLP in every layer
  int moe_router_topk = 2;
  bool moe_grouped_gemm = false;
  int moe_shared_expert_intermediate_size = 0;  // 0: no shared experts
  bool moe_shared_expert_overlap = false;
  bool overlap_moe_expert_parallel_comm = false;  // "EP overlap"
  int moe_ffn_hidden_size = 0;      // expert intermediate size; 0: ffn_hidden_size
  int moe_layer_freq = 1;           // layer i is MoE when i % moe_layer_freq == 0
  double moe_expert_dropout = 0.0;  // expert-internal dropout (expert-parallel-rng)
  double moe_aux_loss_coeff = 0.01; // load-balancing loss coefficient
  bool multi_latent_attention = false;            // MLA (design §14)
  // MLA sizes (Megatron-LM MLATransformerConfig names; rcts-small defaults, used only
  // when multi_latent_attention is on). q_lora_rank 0 is Megatron's None: q comes from
  // a plain column-parallel linear_q_proj instead of down-proj, q_layernorm, up-proj.
  int q_lora_rank = 0;
  int kv_lora_rank = 32;
  int qk_head_dim = 16;           // per-head q/k part without RoPE
  int qk_pos_emb_head_dim = 8;    // per-head RoPE part of q; k's RoPE part is shared by all heads
  int v_head_dim = 16;
  double rotary_base = 10000.0;   // RoPE: inverse frequency j = rotary_base^(-2j / qk_pos_emb_head_dim)
  bool gated_delta_net = false;                   // GDN layers
  // Gated delta net (Megatron-LM linear attention; design §15). Which layers are GDN:
  // linear_attention_freq N > 0 makes layer i self-attention iff (i + 1) % N == 0 and
  // GDN otherwise; linear_attention_pattern (Megatron's list form of the same key, one
  // entry per layer: 1 GDN, 0 self-attention) names each layer. Exactly one is given.
  int linear_attention_freq = 0;                  // 0: not given
  std::vector<int> linear_attention_pattern;      // []: not given
  int linear_conv_kernel_dim = 4;
  int linear_key_head_dim = 128;                  // q and k head dim
  int linear_value_head_dim = 128;                // v and gate head dim
  int linear_num_key_heads = 16;
  int linear_num_value_heads = 32;
  // FP8 (Megatron-LM --fp8-format, --fp8-recipe, --fp8-amax-*; design §12). The
  // reference emulates delayed scaling of the dense linear layers' forward inputs.
  std::optional<std::string> fp8;                 // "e4m3" | "hybrid" | unset: no FP8
  std::string fp8_recipe = "delayed";             // "delayed" | "tensorwise"
  int fp8_amax_history_len = 1;
  std::string fp8_amax_compute_algo = "most_recent";  // "most_recent" | "max"
  int fp8_margin = 0;
  // CUDA graphs (Megatron-LM cuda_graph_impl / cuda_graph_scope): validated only; the
  // reference runs eagerly, which a graph replay equals (design §12).
  std::string cuda_graph_impl = "none";           // none | local | transformer_engine | full_iteration
  std::vector<std::string> cuda_graph_scope;      // ⊆ {attn, mlp, moe, moe_router, moe_preprocess}; [] = whole layer
};

struct ParallelConfig {
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int expert_model_parallel_size = 1;
  int expert_tensor_parallel_size = 1;
  bool sequence_parallel = false;
};

struct RecomputeConfig {
  std::optional<std::string> recompute_granularity;  // "full" | "selective" | unset
  std::optional<std::string> recompute_method;       // "uniform" | "block" | unset
  std::optional<int> recompute_num_layers;
  std::vector<std::string> recompute_modules = {"core_attn"};
  bool distribute_saved_activations = false;
  bool moe_layer_recompute = false;  // deprecated alias of selective + moe
};

struct OffloadConfig {
  bool fine_grained_activation_offloading = false;
  std::vector<std::string> offload_modules;
  int64_t min_offloaded_tensor_size = 1024 * 1024;  // ELEMENTS, not bytes
  bool cpu_offloading = false;                      // layer-level (TE-style)
  int cpu_offloading_num_layers = 0;
  int max_inflight_offloads = 0;     // per group name; 0: unlimited
  // Copy-stream link model. Bandwidth 0 means strict streams: every copy completes
  // only when waited for (the worst case of a race, deterministic); > 0 runs copies
  // asynchronously at that speed so the main stream's exposed wait is measurable.
  double link_bandwidth_gbps = 0.0;
  double link_latency_us = 0.0;
};

struct RunConfig {
  uint64_t seed = 1234;
  int micro_batches = 1;  // gradients accumulate over micro-batches
  int steps = 1;
  bool training = true;   // eval never recomputes
};

struct Config {
  ModelConfig model;
  ParallelConfig parallel;
  RecomputeConfig recompute;
  OffloadConfig offload;
  RunConfig run;

  // Layer i (of this stage) is a gated delta net layer (linear_attention_*).
  bool gdn_layer(int i) const;
  bool gradcheck() const { return model.activation_dtype == DType::f64; }
  DType param_dtype() const { return gradcheck() ? DType::f64 : DType::f32; }
};

}  // namespace rcts
