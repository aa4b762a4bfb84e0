// Analytic activation memory (Korthikanti et al. 2022, "Reducing Activation
// Recomputation in Large Transformer Models"), generalised to the activation dtype
// size d and 1-byte masks, and matched tensor by tensor to what the rcts reference
// layer saves (design §4). All bytes are per rank (per TP shard), for one micro-batch.
//
// Saved tensors of one pre-LN GPT layer (no recompute), s·b·h written sbh:
//   input_layernorm.input        d·sbh      LN1 input (the layer input)
//   attention.qkv.input          d·sbh      LN1 output
//   attention.q / .k / .v        d·sbh      each
//   attention.softmax.output     d·as²b
//   attention.dropout.mask       as²b       only when attention_dropout > 0
//   attention.dropout.output     d·as²b     only when attention_dropout > 0 (else the
//                                           softmax output feeds x V directly)
//   attention.proj.input         d·sbh      core attention output
//   attention.hidden_dropout.mask sbh       only when hidden_dropout > 0
//   pre_mlp_layernorm.input      d·sbh
//   mlp.fc1.input                d·sbh      LN2 output
//   mlp.act.input                d·sb·ffn   (SwiGLU: d·sb·2ffn)
//   mlp.fc2.input                d·sb·ffn
//   mlp.hidden_dropout.mask      sbh        only when hidden_dropout > 0
// bf16, ffn = 4h, GeLU, dropout on: 34·sbh + 5·as²b. Flash attention: no s² tensors;
// what a fused attention keeps instead (the cuda-cudnn backend runs it; design §11):
//   attention.softmax.stats      4·asb      the rows' log-sum-exp in f32 (Korthikanti
//                                           et al. leave it out; every flash kernel
//                                           keeps it); its output is proj.input
// so 34·sbh + 4·asb. Under a core_attn recompute the fused recompute also saves its
// output (d·sbh/t) beside the stats at the attention-recomputed moment below.
// Every count is checked: a config whose bytes exceed int64 is an rcts::Error, never
// a wrapped (negative) number.
//
// Tensor parallelism t shards heads and ffn (q, k, v, s² tensors, proj input, act and
// fc2 inputs: /t); sequence parallelism also shards the sequence of the residual-stream
// tensors (LN inputs, LN outputs, masks: /t).
//
// Selective recompute, the rule implemented (matching Megatron-LM's layer):
//   core_attn  drops the s² tensors; q, k, v stay as the checkpoint's inputs.
//   mlp        drops mlp.act.input and mlp.fc2.input; mlp.fc1.input stays as the
//              checkpoint's input.
//   layernorm  releases both LN outputs (attention.qkv.input, mlp.fc1.input) whoever
//              saved them: with layernorm + mlp the MLP checkpoint's input IS the
//              discarded LN2 output, so mlp.fc1.input is gone too. The LN inputs stay.
//   The masks and LN inputs are never recomputed.
//
// Backward peak (peak_backward_bytes): the most saved + checkpoint-input bytes live at
// once during one micro-batch, as the reference frees them. Backward walks the
// segments last to first; when segment g runs, every earlier segment still holds what
// it stored (the prefix), later ones are freed, and g adds its own worst moment:
//   no recompute    its stored bytes (its backward only frees).
//   full, n layers  n·A once the recompute ran (then each layer's backward frees its
//                   own). The stored input is not extra: the recompute re-saves that
//                   very tensor as its first layer's input (a re-tag from
//                   checkpoint_input to saved_activation, same bytes). With
//                   distribute_saved_activations the stored 1/t shard is a separate
//                   copy beside the gathered input, so it adds c.
//   selective       one layer, MLP branch first (pre-LN backward order), from its
//                   stored bytes S:
//                   (1) + LN2 output if layernorm (recomputed, held by the MLP's saves
//                       or the output-discarding checkpoint until the layer ends)
//                       + act and fc2 inputs if mlp (the MLP recompute);
//                   (2) if mlp, the MLP checkpoint's backward frees its recompute and
//                       its input (the LN2 output, unless layernorm keeps it);
//                   (3) + LN1 output if layernorm, + the s² tensors if core_attn
//                       (fused: the stats and the recomputed output);
//                   worst = max(S, (1), (3)). So core_attn, mlp, layernorm alone and
//                   layernorm+core_attn reach A; core_attn+mlp reaches
//                   max(A - s², A - act - fc2 - LN2 out); layernorm+mlp
//                   max(A - LN1 out, A - act - fc2); all three
//                   max(A - LN1 out - s², A - act - fc2).
// The forward's transient bytes (an LN output until its consumer's forward discards
// it) never exceed this: they are part of one layer's A on top of stored prefixes.
// Not modelled (backward_peak_unmodelled): the backward peak under offload, whose device
// bytes depend on when prefetches finish (what each layer keeps after its forward is
// offload_memory.hpp's). MoE layers are outside the model altogether.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reference/config/config.hpp"

namespace rcts {

// What the model needs from a Config (one layer, one micro-batch, one TP rank).
struct MemoryDims {
  int64_t s = 0, b = 0, h = 0, a = 0, ffn = 0;
  int64_t d = 2;                   // activation dtype bytes
  bool swiglu = false;
  bool attention_dropout = true;   // p > 0: mask and separate dropout output saved
  bool hidden_dropout = true;
  bool flash = false;
  int64_t t = 1;                   // tensor-parallel size
  bool sp = false;                 // sequence parallel
  // Multi-latent attention (design §14; mla_memory.hpp): its attention tensors replace
  // the dense ones.
  bool mla = false;
  int64_t mla_q_lora_rank = 0, mla_kv_lora_rank = 0, mla_qk_head_dim = 0, mla_qk_pos_emb_head_dim = 0,
          mla_v_head_dim = 0;
  static MemoryDims from(const Config& c);
  int64_t sbh() const;  // s*b*h; throws rcts::Error on int64 overflow
};

enum class SaveKind { saved, checkpoint_input };
std::string_view save_kind_name(SaveKind k);

struct SavedTensor {
  std::string name;     // e.g. "attention.q" (see the table above)
  int64_t bytes = 0;
  std::string formula;  // ASCII, e.g. "d*sbh/t", "d*as^2b/t"
  SaveKind kind = SaveKind::saved;
};

struct LayerMemory {
  std::vector<SavedTensor> tensors;
  int64_t total() const;
  int64_t bytes(std::string_view name) const;          // 0 when not saved
  int64_t prefix_bytes(std::string_view prefix) const;  // sum over names starting with prefix
};

// One layer without full recompute; `selective` ⊆ {core_attn, mlp, layernorm}, and
// mla_up_proj for MLA (other names need MoE/GDN, which the model does not cover: an error).
LayerMemory layer_memory(const MemoryDims& m, const std::vector<std::string>& selective = {});
// What a full-recompute chunk keeps: its input "checkpoint.input", d·sbh (/t with SP,
// or /t as flat shards with distribute_saved_activations).
LayerMemory chunk_input_memory(const MemoryDims& m, bool distribute);

// Per-layer saved bytes of one pipeline stage under the config's recompute settings
// (model.num_layers is the whole model; a stage holds num_layers / pp of them).
struct StageMemory {
  std::vector<LayerMemory> layers;   // saved tensors of layer i
  std::vector<std::string> roles;    // e.g. "chunk [0,4) input", "inside chunk [0,4)"
  int64_t full_layer_bytes = 0;      // A: one layer's activations without recompute
  int64_t chunk_input_bytes = 0;     // c: what a checkpointed chunk keeps
  int64_t stored_bytes = 0;          // sum over layers (one micro-batch)
  // Saved + checkpoint-input bytes at the worst moment of backward (derivation
  // above). No gradients, no workspace.
  int64_t peak_backward_bytes = 0;
  int in_flight = 1;                 // P = min(pp - pp_rank, micro_batches) (1F1B, design §16)
  int64_t in_flight_bytes = 0;       // P · stored_bytes
  int64_t peak_in_flight_bytes = 0;  // (P - 1) · stored_bytes + peak_backward_bytes
  std::vector<int64_t> per_layer_bytes() const;
};
// The selective rule above for one layer of either kind, from its stored bytes: the MLP
// branch's recompute (1), the MLP checkpoint's release (2), then the token mixer's (3),
// where `ln1_out` is the LN1 output's bytes and `mixer_recompute` what the mixer's own
// recompute brings back (attention: the s² tensors, the fused output, MLA's q, k, v;
// GDN: gdn.out_proj.input under gdn_norm_out). Every term is a distinct tensor of the
// full layer, so no sum exceeds full.total() (no overflow check needed).
int64_t selective_layer_peak(const LayerMemory& full, int64_t stored, bool layernorm, bool mlp, int64_t ln1_out,
                             int64_t mixer_recompute);
// Pipeline stage pp_rank (its num_layers / pp layers; design §16) of a config.
// Validates the config (validate_or_throw) and covers dense layers only. Stage 0,
// the default, holds the most micro-batches in flight.
StageMemory stage_memory(const Config& c, int pp_rank = 0);
// Why peak_backward_bytes is not the exact device peak of a run of `c` ("" when it is).
std::string backward_peak_unmodelled(const Config& c);

}  // namespace rcts
