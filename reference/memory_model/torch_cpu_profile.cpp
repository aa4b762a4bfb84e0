// torch-cpu: the PyTorch adapter's block (adapters/pytorch/rcts_pytorch/model.py) under
// PyTorch's CPU autograd. Every op computes in f32: `x.float()` is the tensor itself for
// f32 activations and an f32 copy otherwise, so the tensors an op keeps are f32
// whatever the activation dtype. T = s·b tokens, B = b·a, dh = h/a, F = ffn:
//   input_layernorm    native_layer_norm  input f32 [T,h], mean f32 [T,1], rstd f32 [T,1]
//   attention.qkv      addmm              mat1 (the LN output) f32 [T,h]
//   attention.core     bmm (q k^T)        self f32 [B,s,dh], mat2 f32 [B,dh,s]
//                      masked_fill        the causal mask, bool [s,s]
//                      _softmax           result f32 [b,a,s,s]
//                      native_dropout     mask, bool [b,a,s,s]       attention_dropout > 0
//                      bmm (probs v)      self f32 [B,s,s] (not when f32 activations and no
//                                         attention dropout: then it is the softmax result),
//                                         mat2 f32 [B,s,dh]
//   attention.proj     addmm              mat1 f32 [T,h]
//   attention.hidden_dropout  native_dropout  mask bool [T,h]          hidden_dropout > 0
//   pre_mlp_layernorm  native_layer_norm  as input_layernorm
//   mlp.fc1            addmm              mat1 f32 [T,h]
//   mlp.act            gelu               self f32 [T,F]; SwiGLU: silu self (gate) f32
//                                         [T,F], mul self (silu out) and other (up) f32 [T,F]
//   mlp.fc2            addmm              mat1 f32 [T,F]
//   mlp.hidden_dropout native_dropout     mask bool [T,h]              hidden_dropout > 0
// Parameters (weights, biases, W^T views) are not activations and are not counted.
// Recompute: torch.utils.checkpoint keeps the region's input (activation dtype) and
// none of the region's saves: a full-recompute chunk keeps its input at its first layer
// and nothing else; selective core_attn keeps qkv's output [T,3h] instead of the
// attention.core rows, mlp the LN2 output [T,h] instead of the mlp rows, layernorm each
// LN's input [T,h] instead of its three rows. Eval saves nothing.
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
  const int64_t T = checked_mul(z.s, z.b, "s*b"), B = checked_mul(z.b, z.a, "b*a"), dh = z.h / z.a;
  const bool ca = has(selective, "core_attn"), mlp = has(selective, "mlp"), ln = has(selective, "layernorm");
  auto layernorm = [&](const std::string& which) {
    if (ln) return out.add(which, "checkpoint.input", "input", z.act, {T, z.h});
    out.add(which, "layernorm.input", "input", "f32", {T, z.h});
    out.add(which, "layernorm.mean", "mean", "f32", {T, 1});
    out.add(which, "layernorm.rstd", "rstd", "f32", {T, 1});
  };
  layernorm("input_layernorm");
  if (ca) out.add("attention.core", "checkpoint.input", "input", z.act, {T, checked_mul(3, z.h, "3h")});
  out.add("attention.qkv", "linear.input", "mat1", "f32", {T, z.h});
  if (!ca) {
    out.add("attention.core", "attention.scores.q", "self", "f32", {B, z.s, dh});
    out.add("attention.core", "attention.scores.k", "mat2", "f32", {B, dh, z.s});
    out.add("attention.core", "attention.causal_mask", "mask", "bool", {z.s, z.s});
    out.add("attention.core", "attention.softmax", "result", "f32", {z.b, z.a, z.s, z.s});
    const bool dropout = m.attention_dropout > 0.0;
    if (dropout) out.add("attention.core", "dropout.mask", "mask", "bool", {z.b, z.a, z.s, z.s});
    if (dropout || z.act != "f32") out.add("attention.core", "attention.context.probs", "self", "f32", {B, z.s, z.s});
    out.add("attention.core", "attention.context.v", "mat2", "f32", {B, z.s, dh});
  }
  out.add("attention.proj", "linear.input", "mat1", "f32", {T, z.h});
  if (m.hidden_dropout > 0.0) out.add("attention.hidden_dropout", "dropout.mask", "mask", "bool", {T, z.h});
  layernorm("pre_mlp_layernorm");
  if (mlp) {
    out.add("mlp", "checkpoint.input", "input", z.act, {T, z.h});
  } else {
    out.add("mlp.fc1", "linear.input", "mat1", "f32", {T, z.h});
    if (m.activation == "swiglu") {
      out.add("mlp.act", "mlp.silu.input", "self", "f32", {T, z.F});
      out.add("mlp.act", "mlp.mul.up", "other", "f32", {T, z.F});
      out.add("mlp.act", "mlp.mul.silu", "self", "f32", {T, z.F});
    } else {
      out.add("mlp.act", "mlp.gelu.input", "self", "f32", {T, z.F});
    }
    out.add("mlp.fc2", "linear.input", "mat1", "f32", {T, z.F});
  }
  if (m.hidden_dropout > 0.0) out.add("mlp.hidden_dropout", "dropout.mask", "mask", "bool", {T, z.h});
  return out.take();
}

std::vector<SavedEntry> chunk_input(const SavedProfile& p, const Config& c) {
  const Sizes z(c);
  Entries out(p);
  out.add("", "checkpoint.input", "input", z.act, {checked_mul(z.s, z.b, "s*b"), z.h});
  return out.take();
}

}  // namespace

const SavedProfile& torch_cpu() {
  static const SavedProfile p{
      "torch-cpu",
      "the PyTorch adapter's block (adapters/pytorch/rcts_pytorch/model.py) under PyTorch's CPU autograd",
      {
          {"layernorm.input", "aten::native_layer_norm", "input, f32 [T,h]",
           "derivatives.yaml native_layer_norm (input, weight, bias, result1, result2); model.py Layer.layernorm "
           "normalises x.float()"},
          {"layernorm.mean", "aten::native_layer_norm", "mean, f32 [T,1]",
           "derivatives.yaml native_layer_norm (result1); aten/src/ATen/native/cpu/layer_norm_kernel.cpp keeps "
           "mean in the accumulation type"},
          {"layernorm.rstd", "aten::native_layer_norm", "rstd, f32 [T,1]",
           "derivatives.yaml native_layer_norm (result2); aten/src/ATen/native/cpu/layer_norm_kernel.cpp keeps "
           "rstd in the accumulation type"},
          {"linear.input", "aten::addmm", "mat1, f32 [T,in]",
           "derivatives.yaml addmm (mat2: mm_mat2_backward(grad, mat1, ...)); F.linear lowers to addmm "
           "(aten/src/ATen/native/Linear.cpp); model.py Layer.linear passes x.float()"},
          {"attention.scores.q", "aten::bmm", "self, f32 [B,s,dh]",
           "derivatives.yaml bmm (self, mat2); torch.matmul reshapes 4-D operands into contiguous 3-D copies "
           "(aten/src/ATen/native/LinearAlgebra.cpp _matmul_impl)"},
          {"attention.scores.k", "aten::bmm", "mat2, f32 [B,dh,s]", "derivatives.yaml bmm; LinearAlgebra.cpp _matmul_impl"},
          {"attention.causal_mask", "aten::masked_fill", "mask, bool [s,s]",
           "derivatives.yaml masked_fill.Scalar (self: grad.masked_fill(mask, 0)); model.py builds the mask per layer"},
          {"attention.softmax", "aten::_softmax", "result, f32 [b,a,s,s]", "derivatives.yaml _softmax (result)"},
          {"dropout.mask", "aten::native_dropout", "mask, bool",
           "derivatives.yaml native_dropout (result1); aten/src/ATen/native/Dropout.cpp native_dropout_cpu returns a "
           "bool mask; kit recorder.dropout calls torch.native_dropout"},
          {"attention.context.probs", "aten::bmm", "self, f32 [B,s,s]",
           "derivatives.yaml bmm; absent for f32 activations without attention dropout, where it is the softmax "
           "result (one storage)"},
          {"attention.context.v", "aten::bmm", "mat2, f32 [B,s,dh]", "derivatives.yaml bmm; LinearAlgebra.cpp _matmul_impl"},
          {"mlp.gelu.input", "aten::gelu", "self, f32 [T,F]", "derivatives.yaml gelu (self)"},
          {"mlp.silu.input", "aten::silu", "self (the gate half of fc1's output), f32 [T,F]", "derivatives.yaml silu (self)"},
          {"mlp.mul.silu", "aten::mul", "self (silu's output), f32 [T,F]",
           "derivatives.yaml mul.Tensor (other requires grad: self is kept)"},
          {"mlp.mul.up", "aten::mul", "other (the up half of fc1's output), f32 [T,F]",
           "derivatives.yaml mul.Tensor (self requires grad: other is kept)"},
          {"checkpoint.input", "torch.utils.checkpoint", "the region's input, activation dtype",
           "torch/utils/checkpoint.py: CheckpointFunction.forward save_for_backward(*tensor_inputs) (reentrant); the "
           "non-reentrant form holds its inputs in its closure"},
      },
      layer,
      chunk_input,
      false};
  return p;
}

}  // namespace rcts::profile_detail
