// `rcts advise` prices every candidate with the memory model; here each candidate kind
// (the control, every selective subset, full uniform and block N) runs on the reference,
// and its measured bytes equal the advisor's: stored bytes (sum of the per-layer saved
// bytes) and the backward peak of saved + checkpoint-input bytes of every micro-batch.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/advise.hpp"

namespace rcts {
namespace {

TEST(AdviseMeasured, EveryCandidateKindMatchesTheReferenceRun) {
  for (DType act : {DType::bf16, DType::f32}) {
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
    const Advice a = advise(c, int64_t{1} << 40, "test");
    ASSERT_EQ(a.candidates.size(), 8u + 2 * 3);
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
}

}  // namespace
}  // namespace rcts
