// Megatron-LM settings pasted into rcts: the mapping of arguments to
// config fields, Megatron-LM's defaults (expected values computed by hand from
// megatron/training/arguments.py's rules, docs/megatron.md), every problem reported at
// once, YAML and argument text giving the same config.
#include <gtest/gtest.h>

#include "harness/megatron/megatron_args.hpp"

namespace rcts::harness {
namespace {

const std::string kSizes = "--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
                           "--micro-batch-size 2 ";

std::vector<std::string> problems_of(const std::string& text) {
  try {
    import_megatron_arg_string(text);
  } catch (const MegatronArgsError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "no MegatronArgsError for " << text;
  return {};
}

bool any_has(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

TEST(MegatronArgs, MapsTheArgumentsOfARun) {
  const MegatronImport m = import_megatron_arg_string(
      kSizes + "--bf16 --recompute-granularity selective --recompute-modules core_attn mlp "
               "--tensor-model-parallel-size 2 --sequence-parallel --attention-dropout 0.0 --seed 42 "
               "--lr 1e-4 --data-path /data/x --use-distributed-optimizer");
  const Config& c = m.config;
  EXPECT_EQ(c.model.num_layers, 24);
  EXPECT_EQ(c.model.hidden_size, 1024);
  EXPECT_EQ(c.model.num_attention_heads, 16);
  EXPECT_EQ(c.model.seq_length, 2048);
  EXPECT_EQ(c.model.micro_batch_size, 2);
  EXPECT_EQ(c.model.ffn_hidden_size, 4096);  // 4h
  EXPECT_EQ(c.model.activation, "gelu");
  EXPECT_EQ(c.model.activation_dtype, DType::bf16);
  EXPECT_EQ(c.model.attention_dropout, 0.0);
  EXPECT_EQ(c.model.hidden_dropout, 0.1);  // Megatron-LM's default
  EXPECT_EQ(c.parallel.tensor_model_parallel_size, 2);
  EXPECT_TRUE(c.parallel.sequence_parallel);
  EXPECT_EQ(c.recompute.recompute_granularity, "selective");
  EXPECT_EQ(c.recompute.recompute_modules, (std::vector<std::string>{"core_attn", "mlp"}));
  EXPECT_EQ(c.run.seed, 42u);
  EXPECT_EQ(m.ignored, (std::vector<std::string>{"--lr", "--data-path", "--use-distributed-optimizer"}));
}

// A Qwen3-Next-style hybrid: GDN with one attention layer in four (design §15).
TEST(MegatronArgs, MapsTheGatedDeltaNet) {
  const MegatronImport m = import_megatron_arg_string(
      kSizes + "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 "
               "--linear-conv-kernel-dim 3 --linear-key-head-dim 64 --linear-value-head-dim 96 "
               "--linear-num-key-heads 8 --linear-num-value-heads 16 --recompute-granularity selective "
               "--recompute-modules gdn_norm_out");
  const Config& c = m.config;
  EXPECT_TRUE(c.model.gated_delta_net);
  EXPECT_EQ(c.model.linear_attention_freq, 4);
  EXPECT_EQ(c.model.linear_conv_kernel_dim, 3);
  EXPECT_EQ(c.model.linear_key_head_dim, 64);
  EXPECT_EQ(c.model.linear_value_head_dim, 96);
  EXPECT_EQ(c.model.linear_num_key_heads, 8);
  EXPECT_EQ(c.model.linear_num_value_heads, 16);
  EXPECT_TRUE(c.gdn_layer(0));
  EXPECT_FALSE(c.gdn_layer(3));
  EXPECT_TRUE(any_has(problems_of(kSizes + "--experimental-attention-variant dsa"), "--experimental-attention-variant"));
}

TEST(MegatronArgs, DefaultsFollowMegatron) {
  Config c = import_megatron_arg_string(kSizes).config;
  EXPECT_EQ(c.model.activation_dtype, DType::f32);  // params_dtype float32 without --bf16
  EXPECT_FALSE(c.recompute.recompute_granularity.has_value());
  EXPECT_EQ(c.run.seed, 1234u);
  EXPECT_EQ(c.model.moe_aux_loss_coeff, 0.0);
  // SwiGLU: int((4 * 1024 * 2 / 3) / 64) * 64 = int(42.67) * 64 = 2688.
  EXPECT_EQ(import_megatron_arg_string(kSizes + "--swiglu").config.model.ffn_hidden_size, 2688);
  // h = 4096: int(170.67) * 64 = 10880.
  c = import_megatron_arg_string("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --seq-length 8 "
                                 "--micro-batch-size 1 --swiglu")
          .config;
  EXPECT_EQ(c.model.ffn_hidden_size, 10880);
  EXPECT_EQ(import_megatron_arg_string(kSizes + "--swiglu --ffn-hidden-size 3072").config.model.ffn_hidden_size, 3072);
  // --recompute-activations is selective with core_attn (TransformerConfig's default modules).
  c = import_megatron_arg_string(kSizes + "--recompute-activations").config;
  EXPECT_EQ(c.recompute.recompute_granularity, "selective");
  EXPECT_EQ(c.recompute.recompute_modules, std::vector<std::string>{"core_attn"});
}

TEST(MegatronArgs, MultiLatentAttentionSizesAndDefaults) {
  // Defaults from megatron/training/arguments.py: no q compression, 32 / 128 / 64 / 128.
  Config c = import_megatron_arg_string(kSizes + "--multi-latent-attention").config;
  EXPECT_TRUE(c.model.multi_latent_attention);
  EXPECT_EQ(c.model.q_lora_rank, 0);
  EXPECT_EQ(c.model.kv_lora_rank, 32);
  EXPECT_EQ(c.model.qk_head_dim, 128);
  EXPECT_EQ(c.model.qk_pos_emb_head_dim, 64);
  EXPECT_EQ(c.model.v_head_dim, 128);
  c = import_megatron_arg_string(kSizes + "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 "
                                          "--qk-head-dim 96 --qk-pos-emb-head-dim 32 --v-head-dim 80 --rotary-base 5000")
          .config;
  EXPECT_EQ(c.model.q_lora_rank, 1536);
  EXPECT_EQ(c.model.kv_lora_rank, 512);
  EXPECT_EQ(c.model.qk_head_dim, 96);
  EXPECT_EQ(c.model.qk_pos_emb_head_dim, 32);
  EXPECT_EQ(c.model.v_head_dim, 80);
  EXPECT_EQ(c.model.rotary_base, 5000.0);
  EXPECT_TRUE(any_has(problems_of(kSizes + "--multi-latent-attention --q-lora-rank 0"), "--q-lora-rank"));
}

TEST(MegatronArgs, DerivedParallelAndMoeDefaults) {
  Config c = import_megatron_arg_string(kSizes + "--num-experts 8 --tensor-model-parallel-size 2 "
                                                 "--expert-model-parallel-size 2 --sequence-parallel").config;
  EXPECT_EQ(c.model.num_moe_experts, 8);
  EXPECT_EQ(c.model.moe_ffn_hidden_size, 4096);               // = ffn_hidden_size
  EXPECT_EQ(c.parallel.expert_tensor_parallel_size, 2);      // = tensor_model_parallel_size
  const MegatronImport m = import_megatron_arg_string(kSizes + "--sequence-parallel");
  EXPECT_FALSE(m.config.parallel.sequence_parallel);  // Megatron-LM turns SP off at TP = 1
  EXPECT_TRUE(any_has(m.notes, "sequence_parallel off"));
}

TEST(MegatronArgs, ReportsEveryProblemAtOnce) {
  const auto p = problems_of("--num-layer 24 --hidden-size 10x24 --num-attention-heads 16 --seq-length 2048 --fp16 "
                             "--recompute-granularity partial --frobnicate");
  ASSERT_EQ(p.size(), 7u) << ::testing::PrintToString(p);
  EXPECT_TRUE(any_has(p, "--num-layer: unknown to rcts (did you mean --num-layers?)"));
  EXPECT_TRUE(any_has(p, "--hidden-size 10x24: expected an integer"));
  EXPECT_TRUE(any_has(p, "--recompute-granularity partial: must be one of full, selective"));
  EXPECT_TRUE(any_has(p, "--frobnicate: unknown to rcts"));
  EXPECT_TRUE(any_has(p, "--fp16: not modelled"));
  EXPECT_TRUE(any_has(p, "--num-layers: required"));
  EXPECT_TRUE(any_has(p, "--micro-batch-size: required"));
}

TEST(MegatronArgs, ConfigRulesAreReportedTogether) {
  // Selective recompute takes no method (arguments.py asserts it too), and 16 heads do
  // not split over TP = 3.
  const auto p = problems_of(kSizes + "--recompute-granularity selective --recompute-method uniform "
                                      "--tensor-model-parallel-size 3");
  EXPECT_GE(p.size(), 2u) << ::testing::PrintToString(p);
  EXPECT_TRUE(any_has(p, "recompute_method")) << ::testing::PrintToString(p);
  EXPECT_TRUE(any_has(p, "tensor_model_parallel_size = 3")) << ::testing::PrintToString(p);
}

TEST(MegatronArgs, NotModelledUnlessHarmless) {
  EXPECT_NO_THROW(import_megatron_arg_string(kSizes + "--num-query-groups 16 --context-parallel-size 1 "
                                                      "--normalization LayerNorm --kv-channels 64"));
  const auto p = problems_of(kSizes + "--group-query-attention --num-query-groups 8 --context-parallel-size 2 "
                                      "--normalization RMSNorm --attention-backend auto");
  EXPECT_EQ(p.size(), 5u) << ::testing::PrintToString(p);
  EXPECT_TRUE(any_has(p, "--num-query-groups 8: not modelled"));
  EXPECT_TRUE(any_has(p, "--normalization RMSNorm: not modelled"));
  EXPECT_TRUE(any_has(p, "--attention-backend auto"));
  EXPECT_TRUE(import_megatron_arg_string(kSizes + "--attention-backend flash").config.model.flash_attention);
  EXPECT_FALSE(import_megatron_arg_string(kSizes + "--attention-backend unfused").config.model.flash_attention);
}

TEST(MegatronArgs, SplitsLaunchScriptText) {
  std::vector<std::string> problems;
  const auto a = split_megatron_args("  --a=1 \\\n  --b 'x y' \"z\" # a comment --c\n --d\n", problems);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].name, "--a");
  EXPECT_EQ(a[0].values, std::vector<std::string>{"1"});
  EXPECT_EQ(a[1].values, (std::vector<std::string>{"x y", "z"}));
  EXPECT_EQ(a[2].name, "--d");
  EXPECT_TRUE(a[2].values.empty());
  split_megatron_args("pretrain_gpt.py --num-layers 2", problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("'pretrain_gpt.py' is not an argument"), std::string::npos);
  EXPECT_TRUE(any_has(problems_of(kSizes + "--hidden-size 8"), "--hidden-size: given twice"));
  EXPECT_TRUE(any_has(problems_of(kSizes + "--bf16 yes"), "--bf16: expects no value (a flag)"));
}

TEST(MegatronArgs, YamlGivesTheSameConfig) {
  const std::string yaml = R"(ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
MODEL_ARGS:
  --num-layers: 24
  --hidden-size: 1024
  --num-attention-heads: 16
  --seq-length: 2048
  --micro-batch-size: 2
  --bf16: true
  --swiglu: false
  --recompute-granularity: selective
  --recompute-modules: [core_attn, mlp]
  --lr: 4.5e-4
)";
  std::vector<std::string> problems;
  const auto args = megatron_args_from_yaml(yaml, "model_config.yaml", problems);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  const Config y = import_megatron_args(args, "model_config.yaml").config;
  const Config t = import_megatron_arg_string(kSizes + "--bf16 --recompute-granularity selective "
                                                       "--recompute-modules core_attn mlp").config;
  EXPECT_EQ(y.model.ffn_hidden_size, 4096);
  EXPECT_EQ(y.model.activation, "gelu");
  EXPECT_EQ(y.model.activation_dtype, t.model.activation_dtype);
  EXPECT_EQ(y.recompute.recompute_modules, t.recompute.recompute_modules);
  EXPECT_EQ(y.model.num_layers, t.model.num_layers);
  // Flat, with underscores.
  const auto flat = megatron_args_from_yaml("num_layers: 2\nhidden_size: 64\nnum_attention_heads: 4\n"
                                            "seq_length: 16\nmicro_batch_size: 1\nswiglu: true\n",
                                            "flat.yaml", problems);
  EXPECT_EQ(import_megatron_args(flat, "flat.yaml").config.model.ffn_hidden_size, 128);  // int(2.67) * 64
  megatron_args_from_yaml("[1, 2", "broken.yaml", problems);
  EXPECT_TRUE(any_has(problems, "broken.yaml: not YAML"));
}

}  // namespace
}  // namespace rcts::harness
