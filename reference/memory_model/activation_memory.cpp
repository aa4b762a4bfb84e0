// Per-tensor saved bytes of one layer and per-layer bytes of a stage. The tensor list
// mirrors the reference layer's forward order (design §4); see the header for the
// sharding and selective-recompute rules.
#include "reference/memory_model/activation_memory.hpp"

#include <algorithm>

#include "reference/config/pipeline_stage.hpp"
#include "reference/config/validate.hpp"
#include "reference/memory_model/checked_math.hpp"
#include "reference/memory_model/mla_memory.hpp"
#include "reference/memory_model/gdn_memory.hpp"
#include "reference/core/error.hpp"

namespace rcts {
namespace {

void check_dims(const MemoryDims& m) {
  RCTS_CHECK(m.s > 0 && m.b > 0 && m.h > 0 && m.a > 0 && m.ffn > 0 && m.d > 0 && m.t > 0,
             "memory model: dimensions must be positive (s=" + std::to_string(m.s) + " b=" + std::to_string(m.b) +
                 " h=" + std::to_string(m.h) + " a=" + std::to_string(m.a) + " ffn=" + std::to_string(m.ffn) +
                 " t=" + std::to_string(m.t) + ")");
  RCTS_CHECK(m.h % m.a == 0 && m.a % m.t == 0 && m.ffn % m.t == 0,
             "memory model: need h % a == 0, a % t == 0 and ffn % t == 0 (h=" + std::to_string(m.h) +
                 " a=" + std::to_string(m.a) + " ffn=" + std::to_string(m.ffn) + " t=" + std::to_string(m.t) + ")");
  RCTS_CHECK(!m.sp || m.s % m.t == 0, "memory model: sequence parallel needs s % t == 0 (s=" +
                                          std::to_string(m.s) + " t=" + std::to_string(m.t) + ")");
}

// Builds the tensor list with formulas. `sharded`: divided by t on this rank.
class Builder {
 public:
  explicit Builder(const MemoryDims& m) : m_(m) {}
  void add(std::string name, int64_t elements, bool uses_d, const std::string& base, bool sharded,
           SaveKind kind = SaveKind::saved) {
    int64_t bytes = checked_mul(elements, uses_d ? m_.d : 1, "bytes of " + name);
    if (sharded) bytes /= m_.t;  // exact: check_dims guarantees divisibility
    std::string f = (uses_d ? "d*" : "") + base + (sharded && m_.t > 1 ? "/t" : "");
    out_.tensors.push_back({std::move(name), bytes, std::move(f), kind});
  }
  LayerMemory take() { return std::move(out_); }

 private:
  const MemoryDims& m_;
  LayerMemory out_;
};

bool has(const std::vector<std::string>& v, const char* x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// MLA (mla_memory.hpp): the dense attention tensors (every "attention." name but the
// hidden-dropout mask) give way to MLA's, in the same place of the forward order.
void use_mla_attention(LayerMemory& l, std::vector<SavedTensor> mla) {
  auto dense = [](const SavedTensor& t) {
    return t.name.starts_with("attention.") && t.name != "attention.hidden_dropout.mask";
  };
  const auto first = std::find_if(l.tensors.begin(), l.tensors.end(), dense);
  const auto at = std::distance(l.tensors.begin(), first);
  std::erase_if(l.tensors, dense);
  l.tensors.insert(l.tensors.begin() + at, std::make_move_iterator(mla.begin()), std::make_move_iterator(mla.end()));
}

}  // namespace

MemoryDims MemoryDims::from(const Config& c) {
  MemoryDims m;
  m.s = c.model.seq_length;
  m.b = c.model.micro_batch_size;
  m.h = c.model.hidden_size;
  m.a = c.model.num_attention_heads;
  m.ffn = c.model.ffn_hidden_size;
  m.d = static_cast<int64_t>(dtype_size(c.model.activation_dtype));
  m.swiglu = c.model.activation == "swiglu";
  m.attention_dropout = c.model.attention_dropout > 0.0;
  m.hidden_dropout = c.model.hidden_dropout > 0.0;
  m.flash = c.model.flash_attention;
  m.t = c.parallel.tensor_model_parallel_size;
  m.sp = c.parallel.sequence_parallel;
  m.mla = c.model.multi_latent_attention;
  if (m.mla) {
    m.mla_q_lora_rank = c.model.q_lora_rank;
    m.mla_kv_lora_rank = c.model.kv_lora_rank;
    m.mla_qk_head_dim = c.model.qk_head_dim;
    m.mla_qk_pos_emb_head_dim = c.model.qk_pos_emb_head_dim;
    m.mla_v_head_dim = c.model.v_head_dim;
  }
  return m;
}

int64_t MemoryDims::sbh() const { return checked_product({s, b, h}, "s*b*h"); }

std::string_view save_kind_name(SaveKind k) {
  return k == SaveKind::saved ? "saved" : "checkpoint_input";
}

int64_t LayerMemory::total() const {
  int64_t n = 0;
  for (const auto& t : tensors) n = checked_add(n, t.bytes, "layer bytes");
  return n;
}

int64_t LayerMemory::bytes(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return t.bytes;
  return 0;
}

int64_t LayerMemory::prefix_bytes(std::string_view prefix) const {
  int64_t n = 0;
  for (const auto& t : tensors)
    if (std::string_view(t.name).starts_with(prefix)) n = checked_add(n, t.bytes, "layer bytes");
  return n;
}

LayerMemory layer_memory(const MemoryDims& m, const std::vector<std::string>& selective) {
  check_dims(m);
  for (const auto& name : selective)
    RCTS_CHECK(name == "core_attn" || name == "mlp" || name == "layernorm" || (m.mla && name == "mla_up_proj"),
               "memory model: recompute module '" + name +
                   "' is not modelled (dense layers only: core_attn, mlp, layernorm; mla_up_proj with MLA)");
  const bool ca = has(selective, "core_attn"), mlp = has(selective, "mlp"), ln = has(selective, "layernorm");
  const SaveKind qkv_kind = ca ? SaveKind::checkpoint_input : SaveKind::saved;
  const SaveKind fc1_kind = mlp ? SaveKind::checkpoint_input : SaveKind::saved;
  const int64_t sbh = m.sbh(), s2 = checked_product({m.a, m.s, m.s, m.b}, "a*s^2*b"),
                sbf = checked_product({m.s, m.b, m.ffn}, "s*b*ffn");

  Builder t(m);
  // Residual-stream tensors are replicated across TP ranks unless SP shards them.
  t.add("input_layernorm.input", sbh, true, "sbh", m.sp);
  if (!ln) t.add("attention.qkv.input", sbh, true, "sbh", m.sp);
  for (const char* n : {"attention.q", "attention.k", "attention.v"}) t.add(n, sbh, true, "sbh", true, qkv_kind);
  if (m.flash && !ca) {
    // A fused attention keeps the rows' log-sum-exp (f32) for its backward; its output, in
    // token layout, is attention.proj.input below (one storage, counted once).
    t.add("attention.softmax.stats", checked_product({4, m.a, m.s, m.b}, "4*a*s*b"), false, "4*asb", true);
  } else if (!m.flash && !ca) {
    t.add("attention.softmax.output", s2, true, "as^2b", true);
    if (m.attention_dropout) {
      t.add("attention.dropout.mask", s2, false, "as^2b", true);
      t.add("attention.dropout.output", s2, true, "as^2b", true);
    }
  }
  t.add("attention.proj.input", sbh, true, "sbh", true);
  if (m.hidden_dropout) t.add("attention.hidden_dropout.mask", sbh, false, "sbh", m.sp);
  t.add("pre_mlp_layernorm.input", sbh, true, "sbh", m.sp);
  if (!ln) t.add("mlp.fc1.input", sbh, true, "sbh", m.sp, fc1_kind);
  if (!mlp) {
    if (m.swiglu)
      t.add("mlp.act.input", checked_mul(2, sbf, "s*b*2ffn"), true, "sb*2ffn", true);
    else
      t.add("mlp.act.input", sbf, true, "sb*ffn", true);
    t.add("mlp.fc2.input", sbf, true, "sb*ffn", true);
  }
  if (m.hidden_dropout) t.add("mlp.hidden_dropout.mask", sbh, false, "sbh", m.sp);
  LayerMemory out = t.take();
  if (m.mla) use_mla_attention(out, mla_attention_memory(m, ca, has(selective, "mla_up_proj"), ln));
  return out;
}

LayerMemory chunk_input_memory(const MemoryDims& m, bool distribute) {
  check_dims(m);
  const bool split = m.sp || (distribute && m.t > 1);
  RCTS_CHECK(!split || m.sbh() % m.t == 0,
             "memory model: chunk input numel s*b*h is not divisible by t = " + std::to_string(m.t));
  Builder t(m);
  t.add("checkpoint.input", m.sbh(), true, "sbh", split, SaveKind::checkpoint_input);
  return t.take();
}

std::vector<int64_t> StageMemory::per_layer_bytes() const {
  std::vector<int64_t> v;
  for (const auto& l : layers) v.push_back(l.total());
  return v;
}

namespace {

// What one selectively recomputed attention layer holds at the worst moment of its
// backward: selective_layer_peak with attention's LN1 output and what core_attn and
// mla_up_proj bring back.
int64_t selective_layer_worst(const LayerMemory& full, const LayerMemory& kept, const std::vector<std::string>& modules) {
  const bool ca = has(modules, "core_attn"), mlp = has(modules, "mlp"), ln = has(modules, "layernorm");
  // MLA: the LN1 output is linear_kv_down_proj's input; mla_up_proj recomputes q, k, v
  // before core attention's backward (mla_memory.hpp).
  const bool up = has(modules, "mla_up_proj");
  const int64_t qkv = full.bytes("attention.q") + full.bytes("attention.k") + full.bytes("attention.v");
  const int64_t ln1_out = full.bytes("attention.qkv.input") + full.bytes("attention.linear_kv_down_proj.input");
  const int64_t s2 = full.prefix_bytes("attention.softmax.") + full.prefix_bytes("attention.dropout.");
  // A fused core_attn recompute saves its (new) output for the fused backward; the
  // unfused one keeps no output.
  const int64_t fused_out = full.bytes("attention.softmax.stats") > 0 ? full.bytes("attention.proj.input") : 0;
  return selective_layer_peak(full, kept.total(), ln, mlp, ln1_out, (ca ? s2 + fused_out : 0) + (up ? qkv : 0));
}

}  // namespace

int64_t selective_layer_peak(const LayerMemory& full, int64_t stored, bool layernorm, bool mlp, int64_t ln1_out,
                             int64_t mixer_recompute) {
  const int64_t ln2_out = full.bytes("mlp.fc1.input");
  const int64_t mlp_inner = full.bytes("mlp.act.input") + full.bytes("mlp.fc2.input");
  const int64_t mlp_recomputed = stored + (layernorm ? ln2_out : 0) + (mlp ? mlp_inner : 0);
  const int64_t mlp_released = mlp_recomputed - (mlp ? mlp_inner : 0) - (mlp && !layernorm ? ln2_out : 0);
  const int64_t mixer_recomputed = mlp_released + (layernorm ? ln1_out : 0) + mixer_recompute;
  return std::max({stored, mlp_recomputed, mixer_recomputed});
}

StageMemory stage_memory(const Config& c, int pp_rank) {
  validate_or_throw(c, "memory model");
  RCTS_CHECK(c.model.num_moe_experts == 0,
             "memory model: covers dense, MLA and GDN layers only (MoE is not modelled)");
  const MemoryDims m = MemoryDims::from(c);
  const RecomputeConfig r = effective_recompute(c.recompute);
  const int pp = c.parallel.pipeline_model_parallel_size;
  RCTS_CHECK(pp_rank >= 0 && pp_rank < pp, "memory model: pipeline stage " + std::to_string(pp_rank) +
                                               " is not one of pp = " + std::to_string(pp));
  const int L = layers_per_stage(c);  // block N counts from the stage's first layer
  // Global index of the stage's first layer: a hybrid pattern (design §15) is over the whole model.
  const int first = stage_layers(c, pp_rank).first;

  StageMemory st;
  // Hybrid models (design §15): each layer's activations by its kind (GDN or dense).
  std::vector<LayerMemory> full;
  for (int i = 0; i < L; ++i) full.push_back(layer_memory_of(c, m, first + i, {}));
  const LayerMemory chunk = chunk_input_memory(m, r.distribute_saved_activations);
  for (const auto& f : full) st.full_layer_bytes = std::max(st.full_layer_bytes, f.total());
  st.chunk_input_bytes = chunk.total();

  // Segments in forward order: [begin, end) and the bytes the segment itself holds at
  // the worst moment of its backward (everything stored before it is live as well).
  struct Segment {
    int begin, end;
    int64_t worst;
  };
  std::vector<Segment> segs;
  auto range = [](int b, int e) { return "[" + std::to_string(b) + "," + std::to_string(e) + ")"; };
  // A recomputed chunk holds all its layers' activations once its recompute ran. Its
  // stored input is the first layer's input again, unless distribute_saved_activations
  // stored a separate 1/t shard, which stays until the chunk's backward ends.
  auto recomputed_chunk = [&](int b, int e) {
    int64_t recomputed = 0;
    for (int i = b; i < e; ++i)
      recomputed = checked_add(recomputed, full[static_cast<size_t>(i)].total(), "recomputed segment bytes");
    return r.distribute_saved_activations ? checked_add(recomputed, st.chunk_input_bytes, "recomputed segment bytes")
                                          : recomputed;
  };

  if (!c.run.training) {
    // Eval saves nothing for backward and never recomputes (design §6).
    for (int i = 0; i < L; ++i) {
      segs.push_back({i, i + 1, 0});
      st.layers.push_back(LayerMemory{});
      st.roles.push_back("eval: nothing saved");
    }
  } else if (r.recompute_granularity == "full" && r.recompute_method == "uniform") {
    const int n = *r.recompute_num_layers;
    for (int b = 0; b < L; b += n) {
      const int e = std::min(b + n, L);
      segs.push_back({b, e, recomputed_chunk(b, e)});
      for (int i = b; i < e; ++i) {
        st.layers.push_back(i == b ? chunk : LayerMemory{});
        st.roles.push_back((i == b ? "chunk " : "inside chunk ") + range(b, e) + (i == b ? " input" : ""));
      }
    }
  } else if (r.recompute_granularity == "full") {  // block
    const int n = *r.recompute_num_layers;
    for (int i = 0; i < L; ++i) {
      segs.push_back({i, i + 1, i < n ? recomputed_chunk(i, i + 1) : full[static_cast<size_t>(i)].total()});
      st.layers.push_back(i < n ? chunk : full[static_cast<size_t>(i)]);
      st.roles.push_back(i < n ? "block checkpoint input" : "no recompute (after block)");
    }
  } else {
    const bool selective = r.recompute_granularity == "selective";
    const auto modules = selective ? r.recompute_modules : std::vector<std::string>{};
    std::string role = "no recompute";
    if (selective) {
      role = "selective [";
      for (size_t i = 0; i < modules.size(); ++i) role += (i ? "," : "") + modules[i];
      role += "]";
    }
    for (int i = 0; i < L; ++i) {
      const LayerMemory one = layer_memory_of(c, m, first + i, modules);
      const auto& f = full[static_cast<size_t>(i)];
      const auto dense = c.model.gated_delta_net ? dense_modules(modules) : modules;
      const int64_t worst =
          c.gdn_layer(first + i) ? gdn_selective_layer_worst(f, one, modules) : selective_layer_worst(f, one, dense);
      segs.push_back({i, i + 1, worst});
      st.layers.push_back(one);
      st.roles.push_back(role);
    }
  }

  int64_t prefix = 0;
  for (const Segment& g : segs) {
    st.peak_backward_bytes = std::max(st.peak_backward_bytes, checked_add(prefix, g.worst, "backward peak bytes"));
    for (int i = g.begin; i < g.end; ++i)
      prefix = checked_add(prefix, st.layers[static_cast<size_t>(i)].total(), "stage bytes");
  }
  st.stored_bytes = prefix;
  // 1F1B: stage p runs min(pp - p - 1, M) warm-up forwards before its first backward (design §16).
  st.in_flight = std::min(pp - pp_rank, c.run.micro_batches);
  st.in_flight_bytes = checked_mul(st.in_flight, st.stored_bytes, "in-flight bytes");
  st.peak_in_flight_bytes = checked_add(checked_mul(st.in_flight - 1, st.stored_bytes, "in-flight bytes"),
                                        st.peak_backward_bytes, "peak in-flight bytes");
  return st;
}

std::string backward_peak_unmodelled(const Config& c) {
  if (c.offload.fine_grained_activation_offloading || c.offload.cpu_offloading)
    return "offload moves saved bytes to the host while backward runs; the model has no offload timeline";
  return "";
}

}  // namespace rcts
