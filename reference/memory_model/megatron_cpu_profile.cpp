// megatron-core-cpu: megatron-core's TransformerLayer with the local spec
// (get_gpt_layer_local_spec), configured as the Megatron adapter configures it
// (adapters/megatron/rcts_megatron/config.py: biases on, no fused kernels, softmax in
// f32), under PyTorch's CPU autograd, per TP rank. Megatron computes in the activation
// dtype (params_dtype), so what an op keeps is in that dtype ("act") unless said.
// Shapes are Megatron's [s,b,...] layout; np = a/tp heads per rank, hn = h/a, Fp = ffn/tp:
//   input_layernorm   native_layer_norm   input act [s,b,h], mean f32 [s,b,1], rstd f32 [s,b,1]
//   linear_qkv        LinearWithGrad...   input (the LN output) act [s,b,h]
//   core_attention    baddbmm (q k^T)     batch1 act [b·np,s,hn], batch2 act [b·np,hn,s]
//                     _softmax            result f32 [b,np,s,s]
//                     mul (CPU dropout)   the scaled noise act [b,np,s,s]     attention_dropout > 0
//                     bmm (probs v)       self act [b·np,s,s] (not when f32 activations and no
//                                         attention dropout: then it is the softmax result),
//                                         mat2 act [b·np,s,hn]
//   linear_proj       LinearWithGrad...   input act [s,b,h/tp]
//   bias-dropout-add  mul (CPU dropout)   the scaled noise act [s,b,h]        hidden_dropout > 0
//   pre_mlp_layernorm native_layer_norm   as input_layernorm
//   linear_fc1        LinearWithGrad...   input act [s,b,h]
//   activation        gelu                self act [s,b,Fp]; SwiGLU: silu self (x_glu), mul
//                                         self (silu out) and other (x_linear), act [s,b,Fp] each
//   linear_fc2        LinearWithGrad...   input act [s,b,Fp]
//   bias-dropout-add  mul (CPU dropout)   the scaled noise act [s,b,h]        hidden_dropout > 0
// The causal mask is the data loader's, one tensor for every layer (no activation), and
// weights and biases are parameters: neither is counted.
// Recompute (megatron/core/tensor_parallel/random.py): a CheckpointFunction keeps its
// tensor arguments. Full: the chunk's hidden_states act [s,b,h] at its first layer (with
// distribute_saved_activations the 1-D 1/tp share [s·b·h/tp]); the saves its no-grad
// forward made are freed with it. Selective core_attn: query, key, value act [s,b,np,hn]
// and the mask type as int32 [1] instead of the core_attention rows; mlp: the MLP's input
// act [s,b,h] instead of fc1..fc2. Layernorm (CheckpointWithoutOutput): the LN's input
// act [s,b,h] instead of its three rows; its output, which the next op keeps, is freed
// (resize_(0)) and holds nothing, so neither that op's save nor an MLP checkpoint of it
// is counted.
#include <string>
#include <vector>

#include "reference/memory_model/checked_math.hpp"
#include "reference/memory_model/profile_entries.hpp"

namespace rcts::profile_detail {
namespace {

std::vector<SavedEntry> layer(const SavedProfile& p, const Config& c, const std::vector<std::string>& selective) {
  const Sizes z(c);
  const auto& m = c.model;
  Entries out(p);
  const int64_t np = z.a / z.tp, hn = z.h / z.a, Fp = z.F / z.tp, B = checked_mul(z.b, np, "b*np");
  const std::string& act = z.act;
  const bool ca = has(selective, "core_attn"), mlp = has(selective, "mlp"), ln = has(selective, "layernorm");
  auto layernorm = [&](const std::string& which) {
    if (ln) return out.add(which, "layernorm.discarded", "input", act, {z.s, z.b, z.h});
    out.add(which, "layernorm.input", "input", act, {z.s, z.b, z.h});
    out.add(which, "layernorm.mean", "mean", "f32", {z.s, z.b, 1});
    out.add(which, "layernorm.rstd", "rstd", "f32", {z.s, z.b, 1});
  };
  layernorm("input_layernorm");
  if (!ln) out.add("attention.linear_qkv", "linear.input", "input", act, {z.s, z.b, z.h});
  if (ca) {
    for (const char* t : {"query", "key", "value"}) out.add("attention.core", "core_attn.checkpoint", t, act, {z.s, z.b, np, hn});
    out.add("attention.core", "core_attn.mask_type", "attn_mask_type", "i32", {1});
  } else {
    out.add("attention.core", "attention.scores.q", "batch1", act, {B, z.s, hn});
    out.add("attention.core", "attention.scores.k", "batch2", act, {B, hn, z.s});
    out.add("attention.core", "attention.softmax", "result", "f32", {z.b, np, z.s, z.s});
    const bool dropout = m.attention_dropout > 0.0;
    if (dropout) out.add("attention.core", "dropout.noise", "other", act, {z.b, np, z.s, z.s});
    if (dropout || act != "f32") out.add("attention.core", "attention.context.probs", "self", act, {B, z.s, z.s});
    out.add("attention.core", "attention.context.v", "mat2", act, {B, z.s, hn});
  }
  out.add("attention.linear_proj", "linear.input", "input", act, {z.s, z.b, z.h / z.tp});
  if (m.hidden_dropout > 0.0) out.add("attention.bias_dropout_add", "dropout.noise", "other", act, {z.s, z.b, z.h});
  layernorm("pre_mlp_layernorm");
  if (mlp) {
    if (!ln) out.add("mlp", "mlp.checkpoint", "input", act, {z.s, z.b, z.h});
  } else {
    if (!ln) out.add("mlp.linear_fc1", "linear.input", "input", act, {z.s, z.b, z.h});
    if (m.activation == "swiglu") {
      out.add("mlp.activation", "mlp.silu.input", "self", act, {z.s, z.b, Fp});
      out.add("mlp.activation", "mlp.mul.silu", "self", act, {z.s, z.b, Fp});
      out.add("mlp.activation", "mlp.mul.up", "other", act, {z.s, z.b, Fp});
    } else {
      out.add("mlp.activation", "mlp.gelu.input", "self", act, {z.s, z.b, Fp});
    }
    out.add("mlp.linear_fc2", "linear.input", "input", act, {z.s, z.b, Fp});
  }
  if (m.hidden_dropout > 0.0) out.add("mlp.bias_dropout_add", "dropout.noise", "other", act, {z.s, z.b, z.h});
  return out.take();
}

std::vector<SavedEntry> chunk_input(const SavedProfile& p, const Config& c) {
  const Sizes z(c);
  Entries out(p);
  if (c.recompute.distribute_saved_activations && z.tp > 1)
    out.add("", "checkpoint.input", "hidden_states", z.act, {checked_product({z.s, z.b, z.h}, "s*b*h") / z.tp});
  else
    out.add("", "checkpoint.input", "hidden_states", z.act, {z.s, z.b, z.h});
  return out.take();
}

}  // namespace

const SavedProfile& megatron_core_cpu() {
  static const SavedProfile p{
      "megatron-core-cpu",
      "megatron-core's TransformerLayer (local spec, adapters/megatron) under PyTorch's CPU autograd, per TP rank",
      {
          {"layernorm.input", "aten::native_layer_norm", "input, activation dtype [s,b,h]",
           "derivatives.yaml native_layer_norm (input, weight, bias, result1, result2); "
           "megatron/core/transformer/torch_norm.py:39 WrappedTorchNorm builds torch.nn.LayerNorm"},
          {"layernorm.mean", "aten::native_layer_norm", "mean, f32 [s,b,1]",
           "derivatives.yaml native_layer_norm (result1); aten/src/ATen/native/cpu/layer_norm_kernel.cpp keeps mean "
           "in the accumulation type (f32 for bf16)"},
          {"layernorm.rstd", "aten::native_layer_norm", "rstd, f32 [s,b,1]",
           "derivatives.yaml native_layer_norm (result2); layer_norm_kernel.cpp keeps rstd in the accumulation type"},
          {"linear.input", "LinearWithGradAccumulationAndAsyncCommunication", "input, activation dtype [s,b,in]",
           "megatron/core/tensor_parallel/layers.py:465 ctx.save_for_backward(input, weight) (the weight is a "
           "parameter); in = h for linear_qkv and linear_fc1, h/tp for linear_proj, ffn/tp for linear_fc2"},
          {"attention.scores.q", "aten::baddbmm", "batch1 (q), activation dtype [b·np,s,hn]",
           "derivatives.yaml baddbmm (batch1, batch2); megatron/core/transformer/dot_product_attention.py:194"},
          {"attention.scores.k", "aten::baddbmm", "batch2 (k^T), activation dtype [b·np,hn,s]",
           "derivatives.yaml baddbmm; dot_product_attention.py:194"},
          {"attention.softmax", "aten::_softmax", "result, f32 [b,np,s,s]",
           "derivatives.yaml _softmax (result); megatron/core/fusions/fused_softmax.py:313 forward_torch_softmax "
           "casts a bf16 input to f32 (attention_softmax_in_fp32; masked_softmax_fusion off, its kernels are CUDA)"},
          {"dropout.noise", "aten::mul", "other (the scaled keep noise), activation dtype, the dropped tensor's shape",
           "aten/src/ATen/native/Dropout.cpp: on the CPU no fused kernel (is_fused_kernel_acceptable needs CUDA), so "
           "_dropout_impl returns input * (bernoulli_(1-p) / (1-p)) and derivatives.yaml mul.Tensor keeps the "
           "noise; called from dot_product_attention.py:218 and megatron/core/fusions/fused_bias_dropout.py:45"},
          {"attention.context.probs", "aten::bmm", "self (the probabilities), activation dtype [b·np,s,s]",
           "derivatives.yaml bmm; dot_product_attention.py:239; absent for f32 activations without attention "
           "dropout, where it is the softmax result (one storage)"},
          {"attention.context.v", "aten::bmm", "mat2 (v), activation dtype [b·np,s,hn]",
           "derivatives.yaml bmm; dot_product_attention.py:239"},
          {"mlp.gelu.input", "aten::gelu", "self, activation dtype [s,b,ffn/tp]",
           "derivatives.yaml gelu (self); megatron/core/transformer/mlp.py:139 activation_func on fc1's output plus "
           "bias (bias_activation_fusion off)"},
          {"mlp.silu.input", "aten::silu", "self (x_glu, the gate half of fc1's output), activation dtype [s,b,ffn/tp]",
           "derivatives.yaml silu (self); mlp.py:219 glu: torch.chunk(x, 2, dim=-1)"},
          {"mlp.mul.silu", "aten::mul", "self (silu's output), activation dtype [s,b,ffn/tp]",
           "derivatives.yaml mul.Tensor (other requires grad: self is kept); mlp.py:219 glu"},
          {"mlp.mul.up", "aten::mul", "other (x_linear, the up half of fc1's output), activation dtype [s,b,ffn/tp]",
           "derivatives.yaml mul.Tensor (self requires grad: other is kept); mlp.py:219 glu"},
          {"checkpoint.input", "CheckpointFunction",
           "the chunk's hidden_states, activation dtype [s,b,h]; with distribute_saved_activations its 1-D share "
           "[s·b·h/tp]",
           "megatron/core/tensor_parallel/random.py:528 ctx.save_for_backward(*args); random.py:524 "
           "split_tensor_into_1d_equal_chunks; transformer_block.py _checkpointed_forward"},
          {"core_attn.checkpoint", "CheckpointFunction", "query, key and value, activation dtype [s,b,np,hn] each",
           "megatron/core/transformer/attention.py:415 _checkpointed_attention_forward -> tensor_parallel.checkpoint; "
           "random.py:528"},
          {"core_attn.mask_type", "CheckpointFunction", "attn_mask_type, int32 [1]",
           "attention.py:414 attn_mask_type = torch.tensor([attn_mask_type.value], dtype=torch.int)"},
          {"mlp.checkpoint", "CheckpointFunction",
           "the MLP's input (pre_mlp_layernorm's output), activation dtype [s,b,h]; nothing when layernorm recompute "
           "freed that output",
           "megatron/core/transformer/transformer_layer.py:733 tensor_parallel.checkpoint; random.py:528"},
          {"layernorm.discarded", "CheckpointWithoutOutput", "the layernorm's input, activation dtype [s,b,h]",
           "random.py:600 ctx.save_for_backward(*detach_variable(args)); random.py:742 "
           "discard_output_and_register_recompute frees the output (untyped_storage().resize_(0)); "
           "transformer_layer.py:577 and :672"},
      },
      layer,
      chunk_input,
      true};
  return p;
}

}  // namespace rcts::profile_detail
