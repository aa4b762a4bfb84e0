// Every validation rule with a comparison, at both edges: for each boundary
// the value just outside it on either side is rejected with the rule's code (or, on the
// side the rule allows, accepted) and the value exactly at it is accepted, under
// pipeline parallelism too where the bound depends on it. The table is generated per
// row from (value, rejected?) pairs, so a boundary moved by one (`<` for `<=`, the
// whole model for the stage, "longer" for "different") fails a named row. cases/invalid
// holds one case per rule code; this table is the exhaustive edge sweep, which as cases
// would be ~200 files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "reference/config/limits.hpp"
#include "reference/config/validate.hpp"

namespace rcts {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
double below(double v) { return std::nextafter(v, -kInf); }
double above(double v) { return std::nextafter(v, kInf); }

struct Probe {
  double value;
  bool rejected;
};

struct Edge {
  std::string code;
  std::string what;                          // the field (and setting) the row moves
  std::function<void(Config&)> base;         // a valid config the row starts from
  std::function<void(Config&, double)> set;  // puts the probed value in
  std::vector<Probe> probes;
};

int as_int(double v) { return static_cast<int>(v); }

// A minimum m: m - 1 rejected, m and m + 1 accepted.
std::vector<Probe> min_int(int m) { return {{m - 1.0, true}, {double(m), false}, {m + 1.0, false}}; }
// A closed range [lo, hi] of integers.
std::vector<Probe> range_int(int lo, int hi) {
  return {{lo - 1.0, true}, {double(lo), false}, {double(hi), false}, {hi + 1.0, true}};
}
// "A multiple of d" around the multiple m*d.
std::vector<Probe> multiple_of(int d, int m) {
  return {{m * d - 1.0, true}, {double(m * d), false}, {m * d + 1.0, true}};
}

void no_op(Config&) {}
void full(Config& c, const char* method, int n) {
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = method;
  c.recompute.recompute_num_layers = n;
}
void gdn(Config& c) {
  c.model.gated_delta_net = true;
  c.model.linear_num_key_heads = 2;
  c.model.linear_num_value_heads = 4;
}
void moe(Config& c) {
  c.model.num_moe_experts = 4;
  c.model.moe_router_topk = 2;
}

#define SET_INT(field) [](Config& c, double v) { c.field = as_int(v); }
#define SET_I64(field) [](Config& c, double v) { c.field = static_cast<int64_t>(v); }
#define SET_DBL(field) [](Config& c, double v) { c.field = v; }

const std::vector<Edge>& edges() {
  static const std::vector<Edge> e = [] {
    std::vector<Edge> t;
    // model.size_range: every size >= 1 (hidden 1 needs one head).
    const auto one_head = [](Config& c) {
      c.model.num_attention_heads = 1;
      c.model.hidden_size = 4;
    };
    t.push_back({"model.size_range", "num_layers", no_op, SET_INT(model.num_layers), min_int(1)});
    t.push_back({"model.size_range", "hidden_size", one_head, SET_INT(model.hidden_size), min_int(1)});
    t.push_back({"model.size_range", "num_attention_heads", one_head, SET_INT(model.num_attention_heads),
                 {{0, true}, {1, false}, {2, false}}});
    t.push_back({"model.size_range", "seq_length", no_op, SET_INT(model.seq_length), min_int(1)});
    t.push_back({"model.size_range", "micro_batch_size", no_op, SET_INT(model.micro_batch_size), min_int(1)});
    t.push_back({"model.size_range", "ffn_hidden_size", no_op, SET_INT(model.ffn_hidden_size), min_int(1)});
    // model.gdn_size_range (field-level: judged with or without GDN on).
    t.push_back({"model.gdn_size_range", "linear_attention_freq", no_op, SET_INT(model.linear_attention_freq),
                 min_int(0)});
    t.push_back({"model.gdn_size_range", "linear_conv_kernel_dim", no_op, SET_INT(model.linear_conv_kernel_dim),
                 min_int(1)});
    t.push_back({"model.gdn_size_range", "linear_key_head_dim", no_op, SET_INT(model.linear_key_head_dim), min_int(1)});
    t.push_back({"model.gdn_size_range", "linear_value_head_dim", no_op, SET_INT(model.linear_value_head_dim),
                 min_int(1)});
    t.push_back({"model.gdn_size_range", "linear_num_key_heads", no_op, SET_INT(model.linear_num_key_heads),
                 min_int(1)});
    t.push_back({"model.gdn_size_range", "linear_num_value_heads", no_op, SET_INT(model.linear_num_value_heads),
                 min_int(1)});
    t.push_back({"model.num_layers_limit", "num_layers", no_op, SET_INT(model.num_layers),
                 {{limits::kMaxLayers - 1.0, false}, {double(limits::kMaxLayers), false},
                  {limits::kMaxLayers + 1.0, true}}});
    // Probabilities in [0, 1).
    for (const char* which : {"attention_dropout", "hidden_dropout"}) {
      const bool attn = std::string(which) == "attention_dropout";
      t.push_back({"model.dropout_range", which, no_op,
                   attn ? std::function<void(Config&, double)>(SET_DBL(model.attention_dropout))
                        : std::function<void(Config&, double)>(SET_DBL(model.hidden_dropout)),
                   {{below(0.0), true}, {0.0, false}, {below(1.0), false}, {1.0, true}}});
    }
    t.push_back({"model.layernorm_epsilon", "layernorm_epsilon", no_op, SET_DBL(model.layernorm_epsilon),
                 {{0.0, true}, {std::numeric_limits<double>::denorm_min(), false}, {1e300, false}, {kInf, true}}});
    // model.moe_sizes.
    t.push_back({"model.moe_sizes", "num_moe_experts", no_op, SET_INT(model.num_moe_experts),
                 {{-1, true}, {0, false}}});
    t.push_back({"model.moe_sizes", "moe_router_topk", moe, SET_INT(model.moe_router_topk), min_int(1)});
    t.push_back({"model.moe_sizes", "moe_shared_expert_intermediate_size", moe,
                 SET_INT(model.moe_shared_expert_intermediate_size), min_int(0)});
    t.push_back({"model.moe_sizes", "moe_ffn_hidden_size", moe, SET_INT(model.moe_ffn_hidden_size), min_int(0)});
    t.push_back({"model.moe_sizes", "moe_layer_freq", moe, SET_INT(model.moe_layer_freq), min_int(1)});
    t.push_back({"model.moe_sizes", "moe_expert_dropout", moe, SET_DBL(model.moe_expert_dropout),
                 {{below(0.0), true}, {0.0, false}, {below(1.0), false}, {1.0, true}}});
    t.push_back({"model.moe_sizes", "moe_aux_loss_coeff", moe, SET_DBL(model.moe_aux_loss_coeff),
                 {{below(0.0), true}, {0.0, false}}});
    // mla.sizes (field-level).
    t.push_back({"mla.sizes", "q_lora_rank", no_op, SET_INT(model.q_lora_rank), min_int(0)});
    t.push_back({"mla.sizes", "kv_lora_rank", no_op, SET_INT(model.kv_lora_rank), min_int(1)});
    t.push_back({"mla.sizes", "qk_head_dim", no_op, SET_INT(model.qk_head_dim), min_int(1)});
    t.push_back({"mla.sizes", "qk_pos_emb_head_dim", no_op, SET_INT(model.qk_pos_emb_head_dim), min_int(1)});
    t.push_back({"mla.sizes", "v_head_dim", no_op, SET_INT(model.v_head_dim), min_int(1)});
    t.push_back({"mla.sizes", "rotary_base", no_op, SET_DBL(model.rotary_base),
                 {{1.0, true}, {above(1.0), false}, {1e300, false}, {kInf, true}}});
    const auto mla = [](Config& c) {
      c.model.multi_latent_attention = true;
      c.model.qk_pos_emb_head_dim = 4;
    };
    t.push_back({"mla.pos_emb_dim_even", "qk_pos_emb_head_dim with MLA", mla, SET_INT(model.qk_pos_emb_head_dim),
                 multiple_of(2, 2)});
    // parallel.size_range.
    t.push_back({"parallel.size_range", "tensor_model_parallel_size", no_op,
                 SET_INT(parallel.tensor_model_parallel_size), {{0, true}, {1, false}}});
    t.push_back({"parallel.size_range", "pipeline_model_parallel_size", no_op,
                 SET_INT(parallel.pipeline_model_parallel_size), {{0, true}, {1, false}}});
    t.push_back({"parallel.size_range", "expert_model_parallel_size", moe, SET_INT(parallel.expert_model_parallel_size),
                 {{0, true}, {1, false}, {2, false}}});
    t.push_back({"parallel.size_range", "expert_tensor_parallel_size", moe,
                 SET_INT(parallel.expert_tensor_parallel_size), min_int(1)});
    // Layers split evenly over pipeline stages: 4 over 2 stages.
    t.push_back({"pipeline.num_layers_divisible", "num_layers at pp 2",
                 [](Config& c) { c.parallel.pipeline_model_parallel_size = 2; }, SET_INT(model.num_layers),
                 multiple_of(2, 2)});
    t.push_back({"run.range", "micro_batches", no_op, SET_INT(run.micro_batches), min_int(1)});
    t.push_back({"run.range", "steps", no_op, SET_INT(run.steps), min_int(1)});
    t.push_back({"run.limit", "micro_batches", no_op, SET_INT(run.micro_batches),
                 {{double(limits::kMaxMicroBatches), false}, {limits::kMaxMicroBatches + 1.0, true}}});
    t.push_back({"run.limit", "steps", no_op, SET_INT(run.steps),
                 {{double(limits::kMaxSteps), false}, {limits::kMaxSteps + 1.0, true}}});
    // Offload.
    t.push_back({"offload.min_size_negative", "min_offloaded_tensor_size", no_op,
                 SET_I64(offload.min_offloaded_tensor_size), min_int(0)});
    t.push_back({"offload.min_size_negative", "max_inflight_offloads", no_op, SET_INT(offload.max_inflight_offloads),
                 min_int(0)});
    t.push_back({"offload.min_size_negative", "link_latency_us >= 0", no_op, SET_DBL(offload.link_latency_us),
                 {{below(0.0), true}, {0.0, false}}});
    t.push_back({"offload.min_size_negative", "link_bandwidth_gbps >= 0", no_op, SET_DBL(offload.link_bandwidth_gbps),
                 {{below(0.0), true}, {0.0, false}}});
    t.push_back({"offload.link_bounds", "link_bandwidth_gbps: 0 or >= the minimum", no_op,
                 SET_DBL(offload.link_bandwidth_gbps),
                 {{0.0, false},
                  {std::numeric_limits<double>::denorm_min(), true},
                  {below(limits::kMinLinkBandwidthGbps), true},
                  {limits::kMinLinkBandwidthGbps, false}}});
    t.push_back({"offload.link_bounds", "link_latency_us", no_op, SET_DBL(offload.link_latency_us),
                 {{limits::kMaxLinkLatencyUs, false}, {above(limits::kMaxLinkLatencyUs), true}}});
    // Shape and layout divisibility: both neighbours of a multiple are rejected.
    t.push_back({"model.hidden_divisible_by_heads", "hidden_size with 4 heads",
                 [](Config& c) { c.model.num_attention_heads = 4; }, SET_INT(model.hidden_size), multiple_of(4, 4)});
    t.push_back({"parallel.sp_needs_tp", "tensor_model_parallel_size with SP",
                 [](Config& c) { c.parallel.sequence_parallel = true; }, SET_INT(parallel.tensor_model_parallel_size),
                 {{1, true}, {2, false}}});
    const auto tp2 = [](Config& c) { c.parallel.tensor_model_parallel_size = 2; };
    t.push_back({"parallel.heads_divisible_by_tp", "num_attention_heads at tp 2",
                 [](Config& c) {
                   c.parallel.tensor_model_parallel_size = 2;
                   c.model.hidden_size = 60;  // divisible by 3, 4, 5
                 },
                 SET_INT(model.num_attention_heads), multiple_of(2, 2)});
    t.push_back({"parallel.ffn_divisible_by_tp", "ffn_hidden_size at tp 2", tp2, SET_INT(model.ffn_hidden_size),
                 multiple_of(2, 8)});
    t.push_back({"parallel.seq_divisible_by_tp", "seq_length at tp 2 with SP",
                 [](Config& c) {
                   c.parallel.tensor_model_parallel_size = 2;
                   c.parallel.sequence_parallel = true;
                 },
                 SET_INT(model.seq_length), multiple_of(2, 4)});
    t.push_back({"moe.topk_le_experts", "moe_router_topk with 4 experts", moe, SET_INT(model.moe_router_topk),
                 {{3, false}, {4, false}, {5, true}}});
    t.push_back({"moe.experts_divisible_by_ep", "num_moe_experts at ep 2",
                 [](Config& c) {
                   c.model.num_moe_experts = 4;
                   c.parallel.expert_model_parallel_size = 2;
                   c.model.moe_router_topk = 1;
                 },
                 SET_INT(model.num_moe_experts), multiple_of(2, 2)});
    t.push_back({"moe.ep_overlap_needs_ep", "expert_model_parallel_size with EP overlap",
                 [](Config& c) {
                   moe(c);
                   c.model.overlap_moe_expert_parallel_comm = true;
                 },
                 SET_INT(parallel.expert_model_parallel_size), {{1, true}, {2, false}}});
    // recompute_num_layers in [1, layers per stage]: the whole model at pp 1, a stage's
    // share under pipeline parallelism, for both methods.
    for (const char* method : {"uniform", "block"}) {
      for (int pp : {1, 2, 4}) {
        const int layers = 8, per_stage = layers / pp;
        t.push_back({"recompute.num_layers_range",
                     std::string("recompute_num_layers, ") + method + ", 8 layers at pp " + std::to_string(pp),
                     [=](Config& c) {
                       c.model.num_layers = layers;
                       c.parallel.pipeline_model_parallel_size = pp;
                       full(c, method, 1);
                     },
                     [](Config& c, double v) { c.recompute.recompute_num_layers = as_int(v); },
                     range_int(1, per_stage)});
      }
    }
    // The pattern has one entry per layer of the whole model, at any pp.
    for (int pp : {1, 2}) {
      t.push_back({"model.gdn_pattern_length", "linear_attention_pattern length, 4 layers at pp " + std::to_string(pp),
                   [=](Config& c) {
                     gdn(c);
                     c.model.num_layers = 4;
                     c.parallel.pipeline_model_parallel_size = pp;
                   },
                   [](Config& c, double v) { c.model.linear_attention_pattern.assign(static_cast<size_t>(v), 1); },
                   {{1, true}, {2, true}, {3, true}, {4, false}, {5, true}}});
    }
    t.push_back({"model.gdn_value_heads_multiple", "linear_num_value_heads with 2 key heads",
                 [](Config& c) {
                   gdn(c);
                   c.model.linear_attention_freq = 2;
                 },
                 SET_INT(model.linear_num_value_heads), multiple_of(2, 2)});
    t.push_back({"model.gdn_heads_vs_tp", "linear_num_key_heads at tp 2 (value heads 4 x key heads)",
                 [](Config& c) {
                   gdn(c);
                   c.model.linear_attention_freq = 2;
                   c.parallel.tensor_model_parallel_size = 2;
                 },
                 [](Config& c, double v) {
                   c.model.linear_num_key_heads = as_int(v);
                   c.model.linear_num_value_heads = 4 * as_int(v);
                 },
                 multiple_of(2, 2)});
    t.push_back({"distribute.needs_tp", "tensor_model_parallel_size with distributed saves",
                 [](Config& c) {
                   full(c, "uniform", 1);
                   c.recompute.distribute_saved_activations = true;
                 },
                 SET_INT(parallel.tensor_model_parallel_size), {{1, true}, {2, false}}});
    t.push_back({"cpu_offloading.num_layers_range", "cpu_offloading_num_layers, 4 layers",
                 [](Config& c) {
                   c.model.num_layers = 4;
                   c.offload.cpu_offloading = true;
                 },
                 SET_INT(offload.cpu_offloading_num_layers), {{-1, true}, {0, false}, {3, false}, {4, true}}});
    // FP8 delayed scaling.
    t.push_back({"fp8.amax_history_range", "fp8_amax_history_len", [](Config& c) { c.model.fp8 = "e4m3"; },
                 SET_INT(model.fp8_amax_history_len), range_int(1, limits::kMaxAmaxHistory)});
    t.push_back({"fp8.amax_history_range", "fp8_margin", [](Config& c) { c.model.fp8 = "e4m3"; },
                 SET_INT(model.fp8_margin), range_int(0, limits::kMaxFp8Margin)});
    return t;
  }();
  return e;
}

std::string codes(const std::vector<ConfigIssue>& issues) {
  std::string s;
  for (const auto& i : issues) s += " [" + i.code + "] " + i.message + "\n";
  return s;
}

class RuleEdge : public ::testing::TestWithParam<Edge> {};

TEST_P(RuleEdge, RejectsJustOutsideAndAcceptsAtTheBoundary) {
  const Edge& edge = GetParam();
  // The base may sit on a rejected value; the accepted probes show it is otherwise valid.
  Config start;
  edge.base(start);
  const auto known = all_rule_codes();
  ASSERT_NE(std::find(known.begin(), known.end(), edge.code), known.end()) << edge.code << " is not a rule code";
  for (const Probe& p : edge.probes) {
    Config c = start;
    edge.set(c, p.value);
    const auto issues = validate(c);
    const bool has = std::any_of(issues.begin(), issues.end(), [&](const ConfigIssue& i) { return i.code == edge.code; });
    if (p.rejected) {
      EXPECT_TRUE(has) << edge.what << " = " << p.value << " must be rejected with " << edge.code << "; got:\n"
                       << codes(issues);
    } else {
      EXPECT_TRUE(issues.empty()) << edge.what << " = " << p.value << " must be accepted; got:\n" << codes(issues);
    }
  }
}

std::string edge_name(const ::testing::TestParamInfo<Edge>& info) {
  std::string s = info.param.code + "_" + info.param.what + "_" + std::to_string(info.index);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Table, RuleEdge, ::testing::ValuesIn(edges()), edge_name);

// Every rule whose check compares a number has a row here (the others compare names,
// flags or sets: the row table of validate_rules_test.cpp covers them).
TEST(RuleEdges, EveryComparingRuleHasARow) {
  std::set<std::string> rows;
  for (const Edge& e : edges()) rows.insert(e.code);
  for (const char* code :
       {"model.size_range", "model.gdn_size_range", "model.num_layers_limit", "model.dropout_range",
        "model.layernorm_epsilon", "model.moe_sizes", "mla.sizes", "mla.pos_emb_dim_even", "parallel.size_range",
        "pipeline.num_layers_divisible", "run.range", "run.limit", "offload.min_size_negative", "offload.link_bounds",
        "model.hidden_divisible_by_heads", "parallel.sp_needs_tp", "parallel.heads_divisible_by_tp",
        "parallel.ffn_divisible_by_tp", "parallel.seq_divisible_by_tp", "moe.topk_le_experts",
        "moe.experts_divisible_by_ep", "moe.ep_overlap_needs_ep", "recompute.num_layers_range",
        "model.gdn_pattern_length", "model.gdn_value_heads_multiple", "model.gdn_heads_vs_tp", "distribute.needs_tp",
        "cpu_offloading.num_layers_range", "fp8.amax_history_range"})
    EXPECT_TRUE(rows.count(code)) << "no edge row for " << code;
}

}  // namespace
}  // namespace rcts
