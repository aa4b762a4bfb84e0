// `rcts advise` prices every candidate with the memory model; here each candidate kind
// (the control, every selective subset, full uniform and block N) of a dense, an MLA and
// a hybrid GDN model runs on the reference,
// and its measured bytes equal the advisor's: stored bytes (sum of the per-layer saved
// bytes) and the backward peak of saved + checkpoint-input bytes of every micro-batch.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/advise.hpp"

namespace rcts {
namespace {

Config small(DType act) {
  Config c;
  c.model.num_layers = 3;
  c.model.hidden_size = 16;
  c.model.num_attention_heads = 2;
  c.model.seq_length = 8;
  c.model.micro_batch_size = 2;
  c.model.ffn_hidden_size = 64;
  c.model.activation_dtype = act;
  c.run.micro_batches = 2;
  c.recompute.recompute_granularity.reset();
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
    const RunRecord r = execute(run, cpu::default_backend());
    for (size_t mb = 0; mb < r.saved_peaks.size(); ++mb) {
      int64_t stored = 0;
      for (int64_t b : r.saved_bytes_per_layer.at(mb)) stored += b;
      EXPECT_EQ(stored, cand.stored_bytes) << cand.name << " micro-batch " << mb;
      EXPECT_EQ(r.saved_peaks[mb], cand.peak_backward_bytes) << cand.name << " micro-batch " << mb;
    }
  }
}

TEST(AdviseMeasured, EveryCandidateKindMatchesTheReferenceRun) {
  for (DType act : {DType::bf16, DType::f32}) expect_every_candidate_measured(small(act), 8u + 2 * 3);
}

// MLA (design §14): mla_up_proj joins the boundaries, 2^4 selective sets.
TEST(AdviseMeasured, MlaCandidatesMatchTheReferenceRun) {
  Config c = small(DType::f32);
  c.model.multi_latent_attention = true;
  c.model.q_lora_rank = 6;
  c.model.kv_lora_rank = 5;
  c.model.qk_head_dim = 3;
  c.model.qk_pos_emb_head_dim = 4;
  c.model.v_head_dim = 2;
  expect_every_candidate_measured(c, 16u + 2 * 3);
}

// A hybrid model (design §15: layers 0 and 2 GDN, layer 1 attention): gdn_norm_out joins.
TEST(AdviseMeasured, HybridGdnCandidatesMatchTheReferenceRun) {
  Config c = small(DType::bf16);
  c.model.gated_delta_net = true;
  c.model.linear_attention_pattern = {1, 0, 1};
  c.model.linear_conv_kernel_dim = 3;
  c.model.linear_key_head_dim = 4;
  c.model.linear_value_head_dim = 4;
  c.model.linear_num_key_heads = 2;
  c.model.linear_num_value_heads = 4;
  expect_every_candidate_measured(c, 16u + 2 * 3);
}

}  // namespace
}  // namespace rcts
