// Named builders for the tiny configs unit tests run, so a test says which one it
// starts from and only what it changes. Small enough to run in milliseconds, big
// enough that every module has work (two heads, an MLP four times as wide).
#pragma once
#include "reference/config/config.hpp"

namespace rcts::test_support {

// A dense block of `layers` layers: h = 16, a = 2, s = 8, b = 2, ffn = 64, no
// recompute, default dtype (bf16), dropout and seed.
inline Config tiny_dense(int layers, int micro_batches) {
  Config c;
  c.model.num_layers = layers;
  c.model.hidden_size = 16;
  c.model.num_attention_heads = 2;
  c.model.seq_length = 8;
  c.model.micro_batch_size = 2;
  c.model.ffn_hidden_size = 64;
  c.run.micro_batches = micro_batches;
  c.recompute.recompute_granularity.reset();
  return c;
}

}  // namespace rcts::test_support
