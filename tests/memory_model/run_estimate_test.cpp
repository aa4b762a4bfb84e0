// The run estimate and its limits: ordinary configs (the case set's sizes, a
// peer-bench block) fit the defaults; configs that would exhaust memory, run for
// ever or sleep for ever in the link model are refused with a message naming where,
// the estimate and the limit; the limits can be raised.
#include <gtest/gtest.h>

#include <functional>

#include "reference/core/error.hpp"
#include "reference/memory_model/run_estimate.hpp"

namespace rcts {
namespace {

Config dims(int L, int h, int a, int s, int b, int ffn) {
  Config c;
  c.model.num_layers = L;
  c.model.hidden_size = h;
  c.model.num_attention_heads = a;
  c.model.seq_length = s;
  c.model.micro_batch_size = b;
  c.model.ffn_hidden_size = ffn;
  return c;
}

// scripts/peer-bench's block: L=4, h=256, a=4, s=256, b=2, ffn=1024, full recompute.
Config peer_bench() {
  Config c = dims(4, 256, 4, 256, 2, 1024);
  c.model.activation_dtype = DType::f32;
  c.run.micro_batches = 4;
  c.run.steps = 4;
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 1;
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "no error";
}

TEST(RunEstimate, OrdinaryConfigsFitTheDefaults) {
  EXPECT_NO_THROW(check_run_limits(Config{}, "default"));
  EXPECT_NO_THROW(check_run_limits(peer_bench(), "peer bench"));
  Config moe = dims(2, 64, 4, 16, 2, 256);
  moe.model.num_moe_experts = 8;
  moe.model.moe_shared_expert_intermediate_size = 128;
  EXPECT_NO_THROW(check_run_limits(moe, "moe"));
}

TEST(RunEstimate, GrowsWithTheRun) {
  const RunEstimate one = estimate_run(Config{});
  Config more;
  more.run.steps = 3;
  more.run.micro_batches = 2;
  const RunEstimate six = estimate_run(more);
  EXPECT_DOUBLE_EQ(six.work, 6 * one.work);
  EXPECT_DOUBLE_EQ(six.record_bytes, 6 * one.record_bytes);
  EXPECT_DOUBLE_EQ(six.param_bytes, one.param_bytes);
  Config moe;
  moe.model.num_moe_experts = 16;
  EXPECT_GT(estimate_run(moe).param_bytes, 8 * one.param_bytes);  // 16 experts' weights
}

TEST(RunEstimate, TooMuchMemoryIsRefusedNamingTheEstimateAndLimit) {
  const Config big = dims(64, 65536, 64, 64, 1, 65536);  // ~ 1.6 TB of weights
  const std::string msg = error_of([&] { check_run_limits(big, "case x.big (baseline)"); });
  EXPECT_EQ(msg.rfind("case x.big (baseline): the run would need an estimated ", 0), 0u) << msg;
  EXPECT_NE(msg.find("(L=64 h=65536 s=64 b=1, 1 step(s) x 1 micro-batch(es)), over the limit of 8 GiB; raise it "
                     "with --max-bytes"),
            std::string::npos)
      << msg;
}

TEST(RunEstimate, EndlessRunsAreRefused) {
  Config c = peer_bench();  // ~ 15 GFLOP per micro-batch
  c.run.steps = 16;
  c.run.micro_batches = 32;
  // Matmul FLOPs alone: forward, backward (2x) and a full recompute, 4 layers, 512 micro-batches.
  const double b = 2, s = 256, h = 256, matmul = 4 * 4 * 512 * (24 * b * s * h * h + 4 * b * s * s * h);
  EXPECT_GE(estimate_run(c).work, matmul);
  EXPECT_LE(estimate_run(c).work, 1.1 * matmul);
  const std::string work = error_of([&] { check_run_limits(c, "w"); });
  EXPECT_EQ(work.rfind("w: the run would take an estimated ", 0), 0u) << work;
  EXPECT_NE(work.find("over the limit of 4e+12; raise it with --max-work"), std::string::npos) << work;
  // The tiny default model 2^32 times: what the run record keeps per micro-batch adds up.
  Config tiny;
  tiny.run.steps = 65536;
  tiny.run.micro_batches = 65536;
  EXPECT_GT(estimate_run(tiny).record_bytes, limits::kDefaultMaxRunBytes);
  const std::string bytes = error_of([&] { check_run_limits(tiny, "t"); });
  EXPECT_NE(bytes.find("over the limit of 8 GiB; raise it with --max-bytes"), std::string::npos) << bytes;
}

TEST(RunEstimate, SlowLinksAreRefused) {
  Config c = peer_bench();
  c.offload.fine_grained_activation_offloading = true;
  c.offload.offload_modules = {"core_attn"};
  c.offload.link_bandwidth_gbps = 0.01;
  c.offload.link_latency_us = 1e5;
  const std::string msg = error_of([&] { check_run_limits(c, "l"); });
  EXPECT_NE(msg.find("the offload link model would sleep an estimated"), std::string::npos) << msg;
  EXPECT_NE(msg.find("raise it with --max-link-seconds"), std::string::npos) << msg;
  c.offload.link_bandwidth_gbps = 2;
  c.offload.link_latency_us = 50;
  EXPECT_NO_THROW(check_run_limits(c, "l"));
}

TEST(RunEstimate, LimitsCanBeRaised) {
  Config c;
  c.run.steps = 65536;
  c.run.micro_batches = 65536;
  RunLimits raised;
  raised.max_bytes = raised.max_work = 1e30;
  EXPECT_NO_THROW(check_run_limits(c, "w", raised));
  RunLimits lowered;
  lowered.max_bytes = 1024;
  EXPECT_NE(error_of([&] { check_run_limits(Config{}, "d", lowered); }).find("--max-bytes"), std::string::npos);
}

}  // namespace
// The MLA sizes count. Latent ranks of 2^24 on a tiny model hold 16M x 64
// weights in each up-projection alone (GiBs): refused before the run, naming them.
TEST(RunEstimate, MlaSizesCount) {
  Config c = dims(1, 16, 2, 8, 1, 32);
  c.model.multi_latent_attention = true;
  const double plain = estimate_run(c).bytes;
  c.model.q_lora_rank = 1 << 24;
  c.model.kv_lora_rank = 1 << 24;
  EXPECT_GT(estimate_run(c).bytes, 2 * 4.0 * (double{1 << 24} * 2 * 32)) << "the up-projections' weights alone";
  EXPECT_GT(estimate_run(c).bytes, 100 * plain);
  const std::string msg = error_of([&] { check_run_limits(c, "mla"); });
  EXPECT_NE(msg.find("q_lora_rank=16777216 kv_lora_rank=16777216"), std::string::npos) << msg;
  EXPECT_NE(msg.find("over the limit of 8 GiB"), std::string::npos) << msg;
}

}  // namespace rcts
