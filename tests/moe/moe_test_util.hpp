// Shared helpers of the MoE unit tests: small configs, one forward+backward of a
// MoeLayer on its own runtime with every result cloned out (untracked), and a
// bitwise comparison.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/driver/model.hpp"
#include "reference/modules/moe.hpp"
#include "reference/recompute/checkpoint_function.hpp"
#include "tests/support/configs.hpp"

namespace rcts::moe_test {

inline constexpr const char* kPath = "layers.0.moe";

// E = 4, k = 2, h = 8, 8 tokens, expert ffn 6: the sizes of the gradient checks.
inline Config small_config(DType act = DType::f64) {
  Config c = test_support::dense({.layers = 1, .hidden = 8, .seq = 4, .ffn = 12});
  c.model.attention_dropout = 0;
  c.model.hidden_dropout = 0;
  c.model.activation_dtype = act;
  c.model.num_moe_experts = 4;
  c.model.moe_router_topk = 2;
  c.model.moe_ffn_hidden_size = 6;
  c.model.moe_aux_loss_coeff = 0.01;
  c.run.seed = 99;
  return c;
}

// Bigger sizes for bitwise checks in bf16 (and for threads to have work).
inline Config bf16_config() {
  Config c = small_config(DType::bf16);
  c.model.hidden_size = 32;
  c.model.seq_length = 16;
  c.model.micro_batch_size = 2;
  c.model.num_moe_experts = 8;
  c.model.moe_router_topk = 2;
  c.model.moe_ffn_hidden_size = 24;
  return c;
}

inline int64_t tokens_of(const Config& c) { return int64_t{c.model.seq_length} * c.model.micro_batch_size; }

inline Tensor untracked(const Tensor& t) { return t.clone(Placement{}, t.name()); }

struct LayerRun {
  Tensor out, dx;
  std::vector<std::string> param_names;
  std::vector<Tensor> grads;
  std::map<std::string, double> side_effects;
  std::map<std::string, ForwardCount> counts;
  std::vector<MaskRecord> masks;
  RngStates rng_after;
  int64_t saved_after_forward = 0;  // saved_activation + checkpoint_input bytes on device
};

// One training (or eval) micro-batch through a fresh MoeLayer: seeded RNG, input and
// output gradient from fixed streams. `checkpoint_layer` runs the whole layer as a
// normal checkpoint (what TransformerLayer does for recompute module "moe").
inline LayerRun run_layer(const Config& c, bool checkpoint_layer = false) {
  Runtime rt(c, cpu::default_backend());
  seed_runtime(rt);
  LayerRun r;
  {
    MoeLayer layer(rt, kPath);
    std::vector<Parameter*> params;
    layer.parameters(params);
    zero_grads(params);
    const int64_t h = c.model.hidden_size;
    Tensor x = rt.activation({tokens_of(c), h}, "x");
    fill_uniform(x, 777, "x", 1.0);
    SaveContext root(kPath, &rt.save_log, rt.training());
    SaveContext& body = root.child("#body");
    Tensor y = checkpoint_layer ? checkpoint::forward(rt.rng, layer, body, {x}).at(0) : layer.forward(body, x);
    r.saved_after_forward = rt.memory.category(Domain::device, Category::saved_activation).current +
                            rt.memory.category(Domain::device, Category::checkpoint_input).current;
    r.out = untracked(y);
    if (rt.training()) {
      Tensor dy = rt.activation(y.shape(), "dy");
      fill_uniform(dy, 778, "dy", 1.0);
      r.dx = untracked(checkpoint_layer ? checkpoint::backward(rt.rng, layer, body, {dy}).at(0)
                                        : layer.backward(body, dy));
    }
    root.clear();
    for (auto* p : params) {
      r.param_names.push_back(p->name);
      r.grads.push_back(untracked(p->grad));
    }
  }
  r.side_effects = rt.side_effects;
  r.counts = rt.counters.forwards();
  r.masks = rt.masks;
  r.rng_after = rt.rng.all_states();
  return r;
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.bytes(), b.bytes(), static_cast<size_t>(a.nbytes())) == 0;
}

inline void expect_bitwise(const LayerRun& a, const LayerRun& b, const std::string& what) {
  EXPECT_TRUE(same_bits(a.out, b.out)) << what << ": output";
  EXPECT_TRUE(same_bits(a.dx, b.dx)) << what << ": input gradient";
  ASSERT_EQ(a.param_names, b.param_names) << what;
  for (size_t i = 0; i < a.grads.size(); ++i)
    EXPECT_TRUE(same_bits(a.grads[i], b.grads[i])) << what << ": gradient of " << a.param_names[i];
}

inline ForwardCount count(const LayerRun& r, const std::string& path) {
  auto it = r.counts.find(path);
  return it == r.counts.end() ? ForwardCount{} : it->second;
}

}  // namespace rcts::moe_test
