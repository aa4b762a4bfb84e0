// `rcts advise` prices every candidate with the memory model; here each candidate kind
// (the control, every selective subset, full uniform and block N) of a dense, an MLA and
// a hybrid GDN model, each in f32 and bf16, runs on the reference,
// and its measured bytes equal the advisor's: stored bytes (sum of the per-layer saved
// bytes) and the backward peak of saved + checkpoint-input bytes of every micro-batch.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/advise.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config small(DType act) {
  Config c = test_support::tiny_dense(3, 2);
  c.model.activation_dtype = act;
  return c;
}

// Runs every candidate of `c`'s advice (`expected` of them) and compares its bytes.
void expect_every_candidate_measured(const Config& c, size_t expected) {
  const Advice a = advise(c, int64_t{1} << 40, "test");
  ASSERT_EQ(a.candidates.size(), expected);
  for (const AdviceCandidate& cand : a.candidates) {
    ASSERT_TRUE(cand.valid) << cand.name;
    Config run = c;
    run.recompute = cand.recompute;
    const RunRecord r = run_cpu(run);
    for (size_t mb = 0; mb < r.saved_peaks.size(); ++mb) {
      int64_t stored = 0;
      for (int64_t b : r.saved_bytes_per_layer.at(mb)) stored += b;
      EXPECT_EQ(stored, cand.stored_bytes) << cand.name << " micro-batch " << mb;
      EXPECT_EQ(r.saved_peaks[mb], cand.peak_backward_bytes) << cand.name << " micro-batch " << mb;
    }
  }
}

// Every model kind in both activation dtypes: the selective sets are every
// subset of the kind's boundaries (2^3 dense, 2^4 with MLA's mla_up_proj or GDN's
// gdn_norm_out), plus full uniform and block N = 1..L.
enum class Kind { dense, mla, gdn };

Config of_kind(Kind k, DType act) {
  Config c = small(act);
  if (k == Kind::mla) {
    c.model.multi_latent_attention = true;
    c.model.q_lora_rank = 6;
    c.model.kv_lora_rank = 5;
    c.model.qk_head_dim = 3;
    c.model.qk_pos_emb_head_dim = 4;
    c.model.v_head_dim = 2;
  } else if (k == Kind::gdn) {
    // Design §15: layers 0 and 2 GDN, layer 1 attention.
    c.model.gated_delta_net = true;
    c.model.linear_attention_pattern = {1, 0, 1};
    c.model.linear_conv_kernel_dim = 3;
    c.model.linear_key_head_dim = 4;
    c.model.linear_value_head_dim = 4;
    c.model.linear_num_key_heads = 2;
    c.model.linear_num_value_heads = 4;
  }
  return c;
}

class AdviseMeasuredKinds : public ::testing::TestWithParam<std::tuple<Kind, DType>> {};

TEST_P(AdviseMeasuredKinds, EverySubsetAndFullSettingMatchesTheReferenceRun) {
  const auto [kind, act] = GetParam();
  const size_t boundaries = kind == Kind::dense ? 3 : 4;
  expect_every_candidate_measured(of_kind(kind, act), (size_t{1} << boundaries) + 2 * 3);
}

std::string kind_name(const ::testing::TestParamInfo<std::tuple<Kind, DType>>& info) {
  const Kind k = std::get<0>(info.param);
  return std::string(k == Kind::dense ? "dense" : k == Kind::mla ? "mla" : "gdn") + "_" +
         std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Kinds, AdviseMeasuredKinds,
                         ::testing::Combine(::testing::Values(Kind::dense, Kind::mla, Kind::gdn),
                                            ::testing::Values(DType::f32, DType::bf16)),
                         kind_name);

}  // namespace
}  // namespace rcts
