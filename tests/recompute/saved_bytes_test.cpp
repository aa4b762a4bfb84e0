// Measured saved-activation bytes against the analytic model (Korthikanti et al.
// 2022): per layer, per tensor, and under every recompute mode. The model lives in
// reference/memory_model and is written from the paper's formulas, not from the code.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <map>
#include <set>

#include "backends/cpu/cpu_backend.hpp"
#include "reference/core/saved_bytes.hpp"
#include "reference/driver/execute.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/run.hpp"

namespace rcts {
namespace {

using test_support::run_cpu;

Config dims(int L, int h, int a, int s, int b, int ffn) {
  Config c = test_support::dense({.layers = L, .hidden = h, .heads = a, .seq = s, .micro_batch = b, .ffn = ffn});
  c.model.attention_dropout = 0.1;
  c.model.hidden_dropout = 0.1;
  return c;
}

// layers.3.attention.q -> attention.q ; bytes deduplicated by storage.
std::map<std::string, int64_t> per_tensor(const RunRecord& r, int layer) {
  const std::string prefix = "layers." + std::to_string(layer) + ".";
  std::map<std::string, int64_t> out;
  for (const SaveRecord* s : distinct_forward_saves(r.saves, prefix)) out[s->key().substr(prefix.size())] += s->bytes;
  return out;
}

TEST(SavedBytes, OneLayerIsExactlyKorthikantiEquationOne) {
  // bf16, ffn = 4h, GeLU, dropout on: s*b*h*(34 + 5*a*s/h).
  for (auto [h, a, s, b] : std::vector<std::array<int, 4>>{{16, 2, 8, 2}, {32, 4, 16, 1}, {24, 3, 12, 3}}) {
    Config c = dims(2, h, a, s, b, 4 * h);
    const RunRecord r = run_cpu(c);
    const int64_t sbh = int64_t{s} * b * h;
    const int64_t want = sbh * 34 + 5 * int64_t{a} * s * s * b;
    for (int l = 0; l < 2; ++l) EXPECT_EQ(r.saved_bytes_per_layer[0][static_cast<size_t>(l)], want) << h << " " << a;
    // Table 1 breakdown: attention 11sbh + 5as^2b, MLP 19sbh, layernorms 4sbh.
    auto t = per_tensor(r, 1);
    int64_t attn = 0, mlp = 0, ln = 0;
    for (const auto& [k, v] : t) {
      if (k.find("layernorm") != std::string::npos) ln += v;
      else if (k.rfind("attention.", 0) == 0) attn += v;
      else if (k.rfind("mlp.", 0) == 0) mlp += v;
      else ADD_FAILURE() << "unexpected saved tensor " << k;
    }
    EXPECT_EQ(attn, 11 * sbh + 5 * int64_t{a} * s * s * b);
    EXPECT_EQ(mlp, 19 * sbh);
    EXPECT_EQ(ln, 4 * sbh);
  }
}

// SwiGLU with F = ffn: the MLP saves fc1 input (2), the 2F-wide activation input
// (4F/h), the F-wide fc2 input (2F/h) and the mask (1): sbh(3 + 6F/h) in bf16, against
// GeLU's sbh(3 + 4F/h). Megatron's SwiGLU width F = 8h/3 gives 19 sbh, exactly the
// GeLU MLP at 4h, so the layer is again s*b*h*(34 + 5*a*s/h).
TEST(SavedBytes, SwigluCoefficientIsThreePlusSixFOverH) {
  for (auto [h, f] : std::vector<std::array<int, 2>>{{24, 64}, {16, 40}, {32, 96}}) {
    Config c = dims(2, h, 2, 8, 2, f);
    c.model.activation = "swiglu";
    const RunRecord r = run_cpu(c);
    const int64_t sb = 8 * 2, sbh = sb * h, as2b = 2 * 8 * 8 * 2;
    // 15 sbh for attention + norms, 5as^2b, and 3 sbh + 6 sbF for the SwiGLU MLP.
    EXPECT_EQ(r.saved_bytes_per_layer[0][0], 18 * sbh + 6 * sb * f + 5 * as2b) << h << " " << f;
    if (3 * f == 8 * h) {
      EXPECT_EQ(r.saved_bytes_per_layer[0][0], 34 * sbh + 5 * as2b);
    }
  }
}

TEST(SavedBytes, PerTensorBreakdownMatchesTheModel) {
  for (const char* act : {"gelu", "swiglu"}) {
    Config c = dims(2, 16, 2, 8, 2, 40);
    c.model.activation = act;
    const RunRecord r = run_cpu(c);
    const LayerMemory want = layer_memory(MemoryDims::from(c));
    auto got = per_tensor(r, 0);
    ASSERT_EQ(got.size(), want.tensors.size()) << act;
    for (const auto& t : want.tensors) EXPECT_EQ(got[t.name], t.bytes) << act << " " << t.name;
  }
}

struct Mode {
  std::string name;
  std::function<void(Config&)> apply;
};

// No recompute, full uniform and block with N = 1, 2, 3, and selective recompute with
// every subset of {core_attn, mlp, layernorm}, [] included. (distribute_saved_activations
// needs TP > 1: the cases parallel.tp2_distribute* check its peak at 2 ranks.)
std::vector<Mode> recompute_modes() {
  std::vector<Mode> modes = {{"none", [](Config&) {}}};
  for (int n : {1, 2, 3}) {
    modes.push_back({"uniform" + std::to_string(n), [n](Config& c) {
                       c.recompute.recompute_granularity = "full";
                       c.recompute.recompute_method = "uniform";
                       c.recompute.recompute_num_layers = n;
                     }});
    modes.push_back({"block" + std::to_string(n), [n](Config& c) {
                       c.recompute.recompute_granularity = "full";
                       c.recompute.recompute_method = "block";
                       c.recompute.recompute_num_layers = n;
                     }});
  }
  const std::array<const char*, 3> all = {"core_attn", "mlp", "layernorm"};
  for (unsigned subset = 0; subset < 8; ++subset) {
    std::vector<std::string> m;
    std::string name = "selective [";
    for (unsigned i = 0; i < all.size(); ++i)
      if (subset & (1u << i)) {
        name += (m.empty() ? "" : ",") + std::string(all[i]);
        m.push_back(all[i]);
      }
    modes.push_back({name + "]", [m](Config& c) {
                       c.recompute.recompute_granularity = "selective";
                       c.recompute.recompute_modules = m;
                     }});
  }
  return modes;
}

TEST(SavedBytes, EveryRecomputeModeMatchesTheModelPerLayer) {
  const std::vector<Mode> modes = recompute_modes();
  for (DType d : {DType::bf16, DType::f32}) {
    for (double p : {0.0, 0.1}) {
      for (const auto& mode : modes) {
        Config c = dims(5, 16, 2, 8, 2, 64);
        c.model.activation_dtype = d;
        c.model.attention_dropout = p;
        c.model.hidden_dropout = p;
        mode.apply(c);
        const RunRecord r = run_cpu(c);
        EXPECT_EQ(r.saved_bytes_per_layer[0], stage_memory(c).per_layer_bytes())
            << mode.name << " " << dtype_name(d) << " p=" << p;
      }
    }
  }
}

TEST(SavedBytes, SelectiveCoreAttnRemovesExactlyTheSquareTerm) {
  Config c = dims(3, 16, 2, 8, 2, 64);
  const RunRecord none = run_cpu(c);
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn"};
  const RunRecord sel = run_cpu(c);
  const int64_t as2b = 2 * 8 * 8 * 2;
  for (int l = 0; l < 3; ++l)
    EXPECT_EQ(none.saved_bytes_per_layer[0][static_cast<size_t>(l)] - sel.saved_bytes_per_layer[0][static_cast<size_t>(l)],
              5 * as2b);
}

TEST(SavedBytes, FullRecomputeKeepsOnlyChunkInputs) {
  Config c = dims(5, 16, 2, 8, 2, 64);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 2;
  const RunRecord r = run_cpu(c);
  const int64_t input = 8 * 2 * 16 * 2;  // s*b*h bf16
  EXPECT_EQ(r.saved_bytes_per_layer[0], (std::vector<int64_t>{input, 0, input, 0, input}));
}

// The peak of saved + checkpoint-input bytes during each micro-batch (their sum, not
// the sum of their peaks) equals the model's backward peak, derived tensor by tensor
// in activation_memory.hpp, for every recompute mode, dtype, dropout and activation.
TEST(SavedBytes, EveryRecomputeModePeaksAtTheModelsBackwardPeak) {
  for (const char* act : {"gelu", "swiglu"}) {
    for (DType d : {DType::bf16, DType::f32}) {
      for (double p : {0.0, 0.1}) {
        for (const auto& mode : recompute_modes()) {
          Config c = dims(5, 16, 2, 8, 2, 64);
          c.model.activation = act;
          c.model.activation_dtype = d;
          c.model.attention_dropout = p;
          c.model.hidden_dropout = p;
          c.run.micro_batches = 2;
          mode.apply(c);
          const RunRecord r = run_cpu(c);
          const int64_t want = stage_memory(c).peak_backward_bytes;
          ASSERT_EQ(r.saved_peaks.size(), 2u);
          for (int64_t got : r.saved_peaks)
            EXPECT_EQ(got, want) << mode.name << " " << act << " " << dtype_name(d) << " p=" << p;
        }
      }
    }
  }
}

// One checkpointed layer: the recompute re-saves the stored input as the layer's
// input_layernorm.input (a re-tag from checkpoint_input to saved_activation), so the
// two categories' separate peaks add up to one input more than was ever held.
TEST(SavedBytes, RetaggedCheckpointInputIsCountedOnce) {
  Config c = dims(1, 16, 2, 8, 2, 64);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 1;
  const RunRecord r = run_cpu(c);
  const int64_t A = 34 * 8 * 2 * 16 + 5 * 2 * 8 * 8 * 2;  // Korthikanti eq. 1, bf16
  EXPECT_EQ(r.saved_peaks.at(0), A);
  EXPECT_EQ(r.saved_peak, A);
}

}  // namespace
}  // namespace rcts
