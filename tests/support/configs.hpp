// Named builders for the tiny configs unit tests run, so a test says which one it
// starts from and only what it changes. Small enough to run in milliseconds, big
// enough that every module has work (two heads, an MLP four times as wide).
#pragma once
#include "reference/config/config.hpp"

namespace rcts::test_support {

// The shape of a dense block; a test names only the fields it changes.
struct DenseShape {
  int layers = 2;
  int hidden = 16;
  int heads = 2;
  int seq = 8;
  int micro_batch = 2;
  int ffn = 64;
  int micro_batches = 1;
  int steps = 1;
};

// A dense block of that shape, no recompute, default dtype (bf16), dropout and seed.
inline Config dense(const DenseShape& d) {
  Config c;
  c.model.num_layers = d.layers;
  c.model.hidden_size = d.hidden;
  c.model.num_attention_heads = d.heads;
  c.model.seq_length = d.seq;
  c.model.micro_batch_size = d.micro_batch;
  c.model.ffn_hidden_size = d.ffn;
  c.run.micro_batches = d.micro_batches;
  c.run.steps = d.steps;
  c.recompute.recompute_granularity.reset();
  return c;
}

// A dense block of `layers` layers: h = 16, a = 2, s = 8, b = 2, ffn = 64.
inline Config tiny_dense(int layers, int micro_batches) {
  return dense({.layers = layers, .micro_batches = micro_batches});
}

}  // namespace rcts::test_support
