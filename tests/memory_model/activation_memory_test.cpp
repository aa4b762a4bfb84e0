// The activation memory model against Korthikanti et al. 2022: eq. 1, Table 1 and
// Table 2 (TP, TP+SP, selective, full) by hand-computed numbers, plus the rcts
// generalisations (dtype, dropout off, SwiGLU, flash) and per-layer stage vectors.
#include <gtest/gtest.h>

#include "reference/config/config_error.hpp"
#include "reference/memory_model/activation_memory.hpp"
#include "tests/support/configs.hpp"

namespace rcts {
namespace {

MemoryDims dims(int64_t s, int64_t b, int64_t h, int64_t a, int64_t t = 1, bool sp = false) {
  MemoryDims m;
  m.s = s;
  m.b = b;
  m.h = h;
  m.a = a;
  m.ffn = 4 * h;
  m.t = t;
  m.sp = sp;
  return m;  // bf16, GeLU, dropout on, no flash
}

Config config(int L, int64_t s = 16, int64_t b = 2, int64_t h = 64, int64_t a = 4) {
  return test_support::dense({.layers = L, .hidden = static_cast<int>(h), .heads = static_cast<int>(a),
                              .seq = static_cast<int>(s), .micro_batch = static_cast<int>(b),
                              .ffn = static_cast<int>(4 * h)});
}

std::vector<std::string> names(const LayerMemory& l) {
  std::vector<std::string> n;
  for (const auto& t : l.tensors) n.push_back(t.name);
  return n;
}

TEST(ActivationMemory, TensorNamesInForwardOrder) {
  EXPECT_EQ(names(layer_memory(dims(16, 2, 64, 4))),
            (std::vector<std::string>{"input_layernorm.input", "attention.qkv.input", "attention.q", "attention.k",
                                      "attention.v", "attention.softmax.output", "attention.dropout.mask",
                                      "attention.dropout.output", "attention.proj.input",
                                      "attention.hidden_dropout.mask", "pre_mlp_layernorm.input", "mlp.fc1.input",
                                      "mlp.act.input", "mlp.fc2.input", "mlp.hidden_dropout.mask"}));
}

TEST(ActivationMemory, Equation1ForSeveralDims) {
  // sbh(34 + 5as/h) = 34·sbh + 5·as²b
  for (auto [s, b, h, a] : std::vector<std::array<int64_t, 4>>{
           {16, 2, 64, 4}, {2048, 1, 1024, 16}, {4096, 2, 4096, 32}, {8, 3, 24, 6}, {7, 1, 40, 5}}) {
    SCOPED_TRACE(testing::Message() << "s=" << s << " b=" << b << " h=" << h << " a=" << a);
    EXPECT_EQ(layer_memory(dims(s, b, h, a)).total(), 34 * s * b * h + 5 * a * s * s * b);
  }
  // By hand: s=16 b=2 h=64 a=4: sbh = 2048, as²b = 2048 -> 34·2048 + 5·2048 = 79872.
  EXPECT_EQ(layer_memory(dims(16, 2, 64, 4)).total(), 79872);
}

TEST(ActivationMemory, Table1Breakdown) {
  const int64_t s = 2048, b = 1, h = 1024, a = 16, sbh = s * b * h, as2b = a * s * s * b;
  const LayerMemory l = layer_memory(dims(s, b, h, a));
  EXPECT_EQ(l.prefix_bytes("attention."), 11 * sbh + 5 * as2b);
  EXPECT_EQ(l.prefix_bytes("mlp."), 19 * sbh);
  EXPECT_EQ(l.prefix_bytes("input_layernorm.") + l.prefix_bytes("pre_mlp_layernorm."), 4 * sbh);
  // The pieces of the attention term.
  EXPECT_EQ(l.bytes("attention.qkv.input"), 2 * sbh);
  EXPECT_EQ(l.bytes("attention.q") + l.bytes("attention.k"), 4 * sbh);
  EXPECT_EQ(l.bytes("attention.softmax.output"), 2 * as2b);
  EXPECT_EQ(l.bytes("attention.dropout.mask"), as2b);
  EXPECT_EQ(l.bytes("attention.dropout.output"), 2 * as2b);
  EXPECT_EQ(l.bytes("attention.v"), 2 * sbh);
  EXPECT_EQ(l.bytes("attention.proj.input"), 2 * sbh);
  EXPECT_EQ(l.bytes("attention.hidden_dropout.mask"), sbh);
  // MLP: fc1 input 2, GeLU input 8, fc2 input 8, mask 1.
  EXPECT_EQ(l.bytes("mlp.fc1.input"), 2 * sbh);
  EXPECT_EQ(l.bytes("mlp.act.input"), 8 * sbh);
  EXPECT_EQ(l.bytes("mlp.fc2.input"), 8 * sbh);
  EXPECT_EQ(l.bytes("mlp.hidden_dropout.mask"), sbh);
  EXPECT_EQ(l.tensors[6].formula, "as^2b");
  EXPECT_EQ(l.tensors[5].formula, "d*as^2b");
}

TEST(ActivationMemory, DropoutOffRemovesMasksAndTheDropoutOutput) {
  MemoryDims m = dims(16, 2, 64, 4);
  const int64_t sbh = 2048, as2b = 2048;
  m.attention_dropout = false;
  LayerMemory l = layer_memory(m);
  EXPECT_EQ(l.bytes("attention.dropout.mask"), 0);
  EXPECT_EQ(l.bytes("attention.dropout.output"), 0);
  EXPECT_EQ(l.bytes("attention.softmax.output"), 2 * as2b);  // counted once
  EXPECT_EQ(l.total(), 34 * sbh + 2 * as2b);
  m.hidden_dropout = false;
  EXPECT_EQ(layer_memory(m).total(), 32 * sbh + 2 * as2b);
}

TEST(ActivationMemory, DtypeGeneralisation) {
  // 16·d·sbh + 2·sbh (masks) + (2d + 1)·as²b.
  MemoryDims m = dims(16, 2, 64, 4);
  const int64_t sbh = 2048, as2b = 2048;
  m.d = 4;
  EXPECT_EQ(layer_memory(m).total(), 66 * sbh + 9 * as2b);
  m.d = 8;
  EXPECT_EQ(layer_memory(m).total(), 130 * sbh + 17 * as2b);
  Config c = config(1);
  c.model.activation_dtype = DType::f32;
  EXPECT_EQ(MemoryDims::from(c).d, 4);
}

TEST(ActivationMemory, Table2TensorParallelWithoutSP) {
  // sbh(10 + 24/t + 5as/(ht)), s=2048 b=1 h=1024 a=16: sbh = 2^21, 5as/h = 160.
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 2)).total(), 213909504);  // 102·sbh
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 4)).total(), 117440512);  // 56·sbh
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 8)).total(), 69206016);   // 33·sbh
  const LayerMemory l = layer_memory(dims(2048, 1, 1024, 16, 4));
  EXPECT_EQ(l.bytes("input_layernorm.input"), 2 * 2097152);  // replicated
  EXPECT_EQ(l.bytes("attention.q"), 2 * 2097152 / 4);        // head-sharded
  EXPECT_EQ(l.tensors[2].formula, "d*sbh/t");
  EXPECT_EQ(l.tensors[0].formula, "d*sbh");
}

TEST(ActivationMemory, Table2TensorAndSequenceParallel) {
  // sbh(34/t + 5as/(ht))
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 2, true)).total(), 203423744);  // 97·sbh
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 4, true)).total(), 101711872);  // 48.5·sbh
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 8, true)).total(), 50855936);   // 24.25·sbh
}

TEST(ActivationMemory, Table2SelectiveWithTPAndSP) {
  // 34·sbh/t
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 2, true), {"core_attn"}).total(), 35651584);
  EXPECT_EQ(layer_memory(dims(2048, 1, 1024, 16, 8, true), {"core_attn"}).total(), 8912896);
}

TEST(ActivationMemory, Table2FullRecomputeChunkInput) {
  // 2·sbh per layer, /t with SP (or with distribute_saved_activations).
  EXPECT_EQ(chunk_input_memory(dims(2048, 1, 1024, 16), false).total(), 4194304);
  EXPECT_EQ(chunk_input_memory(dims(2048, 1, 1024, 16, 4), false).total(), 4194304);
  EXPECT_EQ(chunk_input_memory(dims(2048, 1, 1024, 16, 4, true), false).total(), 1048576);
  EXPECT_EQ(chunk_input_memory(dims(2048, 1, 1024, 16, 4), true).total(), 1048576);
  EXPECT_EQ(chunk_input_memory(dims(2048, 1, 1024, 16), false).tensors[0].kind, SaveKind::checkpoint_input);
}

TEST(ActivationMemory, SelectiveRules) {
  const MemoryDims m = dims(16, 2, 64, 4);
  const int64_t sbh = 2048, as2b = 2048;
  const LayerMemory ca = layer_memory(m, {"core_attn"});
  EXPECT_EQ(ca.total(), 34 * sbh);
  EXPECT_EQ(ca.bytes("attention.softmax.output"), 0);
  EXPECT_EQ(ca.tensors[2].name, "attention.q");
  EXPECT_EQ(ca.tensors[2].kind, SaveKind::checkpoint_input);

  const LayerMemory mlp = layer_memory(m, {"mlp"});
  EXPECT_EQ(mlp.total(), 18 * sbh + 5 * as2b);
  EXPECT_EQ(mlp.bytes("mlp.act.input") + mlp.bytes("mlp.fc2.input"), 0);
  EXPECT_EQ(mlp.bytes("mlp.fc1.input"), 2 * sbh);
  EXPECT_EQ(mlp.bytes("mlp.hidden_dropout.mask"), sbh);

  const LayerMemory ln = layer_memory(m, {"layernorm"});
  EXPECT_EQ(ln.total(), 30 * sbh + 5 * as2b);
  EXPECT_EQ(ln.bytes("attention.qkv.input") + ln.bytes("mlp.fc1.input"), 0);
  EXPECT_EQ(ln.bytes("input_layernorm.input"), 2 * sbh);

  // layernorm + mlp: the MLP checkpoint's input is the discarded LN2 output.
  EXPECT_EQ(layer_memory(m, {"layernorm", "mlp"}).total(), 14 * sbh + 5 * as2b);
  EXPECT_EQ(layer_memory(m, {"mlp", "layernorm", "core_attn"}).total(), 14 * sbh);
  EXPECT_EQ(layer_memory(m, {}).total(), layer_memory(m).total());
  EXPECT_THROW(layer_memory(m, {"moe"}), Error);
}

TEST(ActivationMemory, SwigluAndOtherFfnSizes) {
  // GeLU: sbh(18 + 4·ffn/h) + 5as²b; SwiGLU: sbh(18 + 6·ffn/h) + 5as²b.
  MemoryDims m = dims(16, 2, 96, 4);
  const int64_t sbh = 16 * 2 * 96, as2b = 4 * 16 * 16 * 2;
  m.ffn = 256;  // 8h/3
  EXPECT_EQ(layer_memory(m).total(), 18 * sbh + 4 * 16 * 2 * 256 + 5 * as2b);
  m.swiglu = true;
  const LayerMemory l = layer_memory(m);
  EXPECT_EQ(l.total(), 18 * sbh + 6 * 16 * 2 * 256 + 5 * as2b);
  EXPECT_EQ(l.bytes("mlp.act.input"), 2 * 16 * 2 * 2 * 256);  // fc1 output is 2·ffn wide
  EXPECT_EQ(l.tensors[12].formula, "d*sb*2ffn");
  m.ffn = 3 * 96;  // ffn = 3h: 18 + 18 = 36
  EXPECT_EQ(layer_memory(m).total(), 36 * sbh + 5 * as2b);
}

TEST(ActivationMemory, FlashAttentionSavesNoSquareTerm) {
  MemoryDims m = dims(2048, 1, 1024, 16);
  m.flash = true;
  const LayerMemory l = layer_memory(m);
  // 34·sbh + the f32 row statistics, 4·asb (a·s·b = 16·2048).
  EXPECT_EQ(l.total(), 34 * 2097152 + 4 * 16 * 2048);
  EXPECT_EQ(l.bytes("attention.softmax.stats"), 4 * 16 * 2048);
  EXPECT_EQ(l.bytes("attention.softmax.output"), 0);
  for (const auto& t : l.tensors) EXPECT_EQ(t.formula.find("s^2"), std::string::npos) << t.name;
  m.t = 4;
  m.sp = true;
  EXPECT_EQ(layer_memory(m).total(), (34 * 2097152 + 4 * 16 * 2048) / 4);
  // core_attn recompute drops the statistics too.
  EXPECT_EQ(layer_memory(m, {"core_attn"}).bytes("attention.softmax.stats"), 0);
}

TEST(ActivationMemory, AFusedCoreAttnRecomputeHoldsItsOutputBesideTheStats) {
  Config c = config(3);
  c.model.flash_attention = true;
  const int64_t A = stage_memory(c).full_layer_bytes;
  const int64_t stats = 4 * 4 * 16 * 2, context = 2 * 16 * 2 * 64;  // 4·asb; d·sbh
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn"};
  const StageMemory st = stage_memory(c);
  EXPECT_EQ(st.per_layer_bytes(), std::vector<int64_t>(3, A - stats));
  // The last layer's backward: the two earlier layers stored, this one's stats and the
  // recomputed output (a new tensor: the projection keeps the original) on top of its own.
  EXPECT_EQ(st.peak_backward_bytes, 2 * (A - stats) + A + context);
}

TEST(ActivationMemory, InconsistentDimsAreErrors) {
  EXPECT_THROW(layer_memory(dims(16, 2, 64, 4, 3)), Error);          // a % t
  EXPECT_THROW(layer_memory(dims(15, 2, 64, 4, 2, true)), Error);    // s % t under SP
  EXPECT_THROW(layer_memory(dims(0, 2, 64, 4)), Error);
}

// ---- stages ------------------------------------------------------------------------

TEST(StageMemory, NoRecompute) {
  const StageMemory st = stage_memory(config(3));
  const int64_t A = 79872;
  EXPECT_EQ(st.per_layer_bytes(), (std::vector<int64_t>{A, A, A}));
  EXPECT_EQ(st.full_layer_bytes, A);
  EXPECT_EQ(st.stored_bytes, 3 * A);
  EXPECT_EQ(st.peak_backward_bytes, 3 * A);
  EXPECT_EQ(st.roles[0], "no recompute");
}

TEST(StageMemory, FullUniformSixteenLayersChunksOfFive) {
  Config c = config(16);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 5;
  const StageMemory st = stage_memory(c);
  const int64_t cin = 2 * 2048, A = 79872;
  std::vector<int64_t> want(16, 0);
  for (int i : {0, 5, 10, 15}) want[static_cast<size_t>(i)] = cin;  // [0,5) [5,10) [10,15) [15,16)
  EXPECT_EQ(st.per_layer_bytes(), want);
  EXPECT_EQ(st.roles[0], "chunk [0,5) input");
  EXPECT_EQ(st.roles[3], "inside chunk [0,5)");
  EXPECT_EQ(st.roles[15], "chunk [15,16) input");
  EXPECT_EQ(st.stored_bytes, 4 * cin);
  // Backward of chunk [10,15): chunks 0 and 1 stored + 5 layers recomputed.
  EXPECT_EQ(st.peak_backward_bytes, 2 * cin + 5 * A);
  EXPECT_EQ(st.chunk_input_bytes, cin);
}

TEST(StageMemory, FullBlockCheckpointsTheFirstN) {
  Config c = config(4);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "block";
  c.recompute.recompute_num_layers = 2;
  const StageMemory st = stage_memory(c);
  const int64_t cin = 4096, A = 79872;
  EXPECT_EQ(st.per_layer_bytes(), (std::vector<int64_t>{cin, cin, A, A}));
  EXPECT_EQ(st.stored_bytes, 2 * cin + 2 * A);
  EXPECT_EQ(st.peak_backward_bytes, 2 * cin + 2 * A);  // the start of backward
}

TEST(StageMemory, FullWithSPOrDistributeStoresAShard) {
  Config c = config(2);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 1;
  c.parallel.tensor_model_parallel_size = 2;
  c.recompute.distribute_saved_activations = true;
  EXPECT_EQ(stage_memory(c).per_layer_bytes(), (std::vector<int64_t>{2048, 2048}));  // 2·sbh/t
  c.recompute.distribute_saved_activations = false;
  EXPECT_EQ(stage_memory(c).per_layer_bytes(), (std::vector<int64_t>{4096, 4096}));
  c.parallel.sequence_parallel = true;
  EXPECT_EQ(stage_memory(c).per_layer_bytes(), (std::vector<int64_t>{2048, 2048}));
}

TEST(StageMemory, SelectiveCoreAttnAndTheEmptyControl) {
  Config c = config(4);
  c.recompute.recompute_granularity = "selective";
  c.recompute.recompute_modules = {"core_attn"};
  const StageMemory st = stage_memory(c);
  const int64_t S = 34 * 2048, A = 79872;
  EXPECT_EQ(st.stored_bytes, 4 * S);
  EXPECT_EQ(st.peak_backward_bytes, 3 * S + A);  // last layer's s² terms recomputed
  EXPECT_EQ(st.roles[0], "selective [core_attn]");
  c.recompute.recompute_modules = {};  // the [] control recomputes nothing
  EXPECT_EQ(stage_memory(c).peak_backward_bytes, 4 * A);
}

// The backward peak of every selective combination, by hand (4 layers, bf16, s=16 b=2
// h=64 a=4 ffn=4h): sbh = 2048; an LN output is 2·sbh = 4096 bytes, the s² tensors
// 5·as²b = 10240, the MLP's act + fc2 inputs 2·2·s·b·ffn = 32768; A = 79872. The peak is
// 3 stored layers + the last layer's worst moment (header: MLP recompute, release,
// attention recompute).
TEST(StageMemory, SelectiveBackwardPeakEveryCombination) {
  const int64_t A = 79872, ln = 4096, s2 = 10240, inner = 32768;
  struct Row {
    std::vector<std::string> modules;
    int64_t stored, worst;
  };
  const std::vector<Row> rows = {
      {{"core_attn"}, A - s2, A},
      {{"mlp"}, A - inner, A},
      {{"layernorm"}, A - 2 * ln, A},  // both LN outputs are back before attention's backward
      {{"core_attn", "layernorm"}, A - 2 * ln - s2, A},
      // The MLP checkpoint frees its input and recompute before attention recomputes.
      {{"core_attn", "mlp"}, A - s2 - inner, std::max(A - s2, A - inner - ln)},
      // LN1's output comes back only after the MLP recompute is freed; LN2's stays.
      {{"mlp", "layernorm"}, A - 2 * ln - inner, std::max(A - ln, A - inner)},
      {{"core_attn", "mlp", "layernorm"}, A - 2 * ln - s2 - inner, std::max(A - ln - s2, A - inner)},
  };
  for (const Row& row : rows) {
    Config c = config(4);
    c.recompute.recompute_granularity = "selective";
    c.recompute.recompute_modules = row.modules;
    const StageMemory st = stage_memory(c);
    std::string name;
    for (const auto& m : row.modules) name += m + " ";
    EXPECT_EQ(st.stored_bytes, 4 * row.stored) << name;
    EXPECT_EQ(st.peak_backward_bytes, 3 * row.stored + row.worst) << name;
  }
}

// distribute_saved_activations stores a separate 1/t shard, live beside the gathered
// input the recompute re-saves; without it the stored input is that input itself.
TEST(StageMemory, DistributedShardStaysLiveDuringItsRecompute) {
  Config c = config(3);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 1;
  c.parallel.tensor_model_parallel_size = 2;
  // A at t = 2: LN inputs and outputs 4·4096, q k v 3·2048, s² 10240/2, proj input 2048,
  // two 1-byte masks 2·2048 (replicated), act and fc2 inputs 2·8192.
  const int64_t A = 4 * 4096 + 3 * 2048 + 5120 + 2048 + 2 * 2048 + 2 * 8192;
  EXPECT_EQ(stage_memory(c).full_layer_bytes, A);
  EXPECT_EQ(stage_memory(c).peak_backward_bytes, 2 * 4096 + A);
  c.recompute.distribute_saved_activations = true;
  EXPECT_EQ(stage_memory(c).peak_backward_bytes, 2 * 2048 + A + 2048);
}

TEST(StageMemory, PipelineInFlightMicroBatches) {
  Config c = config(8);  // num_layers is the whole model: 2 layers per stage (design §16)
  c.parallel.pipeline_model_parallel_size = 4;
  c.run.micro_batches = 8;
  StageMemory st = stage_memory(c);
  EXPECT_EQ(st.layers.size(), 2u);
  EXPECT_EQ(st.stored_bytes, stage_memory(config(2)).stored_bytes);
  EXPECT_EQ(st.in_flight, 4);
  EXPECT_EQ(st.in_flight_bytes, 4 * st.stored_bytes);
  EXPECT_EQ(st.peak_in_flight_bytes, 3 * st.stored_bytes + st.peak_backward_bytes);
  c.run.micro_batches = 2;
  EXPECT_EQ(stage_memory(c).in_flight, 2);  // fewer micro-batches than stages
}

TEST(StageMemory, PipelineInFlightIsPerStage) {
  // 1F1B: stage p runs min(pp - p - 1, M) warm-up forwards, so it holds min(pp - p, M).
  Config c = config(8);
  c.parallel.pipeline_model_parallel_size = 4;
  c.run.micro_batches = 8;
  const std::vector<int> want = {4, 3, 2, 1};
  for (int p = 0; p < 4; ++p) {
    const StageMemory st = stage_memory(c, p);
    EXPECT_EQ(st.in_flight, want[static_cast<size_t>(p)]) << "stage " << p;
    EXPECT_EQ(st.peak_in_flight_bytes, (want[static_cast<size_t>(p)] - 1) * st.stored_bytes + st.peak_backward_bytes);
  }
  c.run.micro_batches = 2;
  EXPECT_EQ(stage_memory(c, 1).in_flight, 2);
  EXPECT_EQ(stage_memory(c, 3).in_flight, 1);
  EXPECT_THROW(stage_memory(c, 4), Error);
}

TEST(StageMemory, InvalidConfigsAreRejected) {
  Config c = config(2);
  c.recompute.recompute_granularity = "full";
  c.recompute.recompute_method = "uniform";
  c.recompute.recompute_num_layers = 3;  // N > L
  try {
    stage_memory(c);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.code(), "recompute.num_layers_range");
  }
  Config m = config(2);
  m.model.num_moe_experts = 4;
  EXPECT_THROW(stage_memory(m), Error);  // dense layers only
}

}  // namespace
}  // namespace rcts
