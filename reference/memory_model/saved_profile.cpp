// The profiles' rows and the per-layer inventory they give (the table is in the header).
#include "reference/memory_model/saved_profile.hpp"

#include <algorithm>

#include "reference/config/validate.hpp"
#include "reference/core/error.hpp"
#include "reference/memory_model/checked_math.hpp"

namespace rcts {
namespace {

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
      }};
  return p;
}

const SavedProfile& reference() {
  static const SavedProfile p{kReferenceProfile,
                              "rcts's reference layer: Korthikanti et al. 2022's tensors "
                              "(reference/memory_model/activation_memory.hpp)",
                              {}};
  return p;
}

bool has(const std::vector<std::string>& v, const char* x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// torch-cpu's rows for one layer under `selective` (modules checkpointed one by one).
class TorchCpuLayer {
 public:
  TorchCpuLayer(const SavedProfile& p, const Config& c) : p_(p), c_(c) {
    const auto& m = c.model;
    T_ = checked_mul(m.seq_length, m.micro_batch_size, "s*b");
    h_ = m.hidden_size;
    a_ = m.num_attention_heads;
    s_ = m.seq_length;
    b_ = m.micro_batch_size;
    F_ = m.ffn_hidden_size;
    act_ = std::string(dtype_name(m.activation_dtype));
  }

  std::vector<SavedEntry> layer(const std::vector<std::string>& selective) {
    std::vector<SavedEntry> out;
    const auto& m = c_.model;
    auto add = [&](std::string module, std::string_view row, std::string tensor, std::string dtype,
                   std::vector<int64_t> shape) {
      const ProfileRow& r = p_.row(row);
      int64_t bytes = dtype_name_bytes(dtype);
      for (int64_t d : shape) bytes = checked_mul(bytes, d, "bytes of " + module + "." + tensor);
      out.push_back({std::move(module), std::string(r.op), std::move(tensor), std::move(dtype), std::move(shape), bytes,
                     std::string(r.id)});
    };
    const bool ca = has(selective, "core_attn"), mlp = has(selective, "mlp"), ln = has(selective, "layernorm");
    auto layernorm = [&](const std::string& which) {
      if (ln) return add(which, "checkpoint.input", "input", act_, {T_, h_});
      add(which, "layernorm.input", "input", "f32", {T_, h_});
      add(which, "layernorm.mean", "mean", "f32", {T_, 1});
      add(which, "layernorm.rstd", "rstd", "f32", {T_, 1});
    };
    const int64_t B = checked_mul(b_, a_, "b*a"), dh = h_ / a_;
    layernorm("input_layernorm");
    if (ca) {
      add("attention.core", "checkpoint.input", "input", act_, {T_, checked_mul(3, h_, "3h")});
    }
    add("attention.qkv", "linear.input", "mat1", "f32", {T_, h_});
    if (!ca) {
      add("attention.core", "attention.scores.q", "self", "f32", {B, s_, dh});
      add("attention.core", "attention.scores.k", "mat2", "f32", {B, dh, s_});
      add("attention.core", "attention.causal_mask", "mask", "bool", {s_, s_});
      add("attention.core", "attention.softmax", "result", "f32", {b_, a_, s_, s_});
      const bool dropout = m.attention_dropout > 0.0;
      if (dropout) add("attention.core", "dropout.mask", "mask", "bool", {b_, a_, s_, s_});
      if (dropout || act_ != "f32") add("attention.core", "attention.context.probs", "self", "f32", {B, s_, s_});
      add("attention.core", "attention.context.v", "mat2", "f32", {B, s_, dh});
    }
    add("attention.proj", "linear.input", "mat1", "f32", {T_, h_});
    if (m.hidden_dropout > 0.0) add("attention.hidden_dropout", "dropout.mask", "mask", "bool", {T_, h_});
    layernorm("pre_mlp_layernorm");
    if (mlp) {
      add("mlp", "checkpoint.input", "input", act_, {T_, h_});
    } else {
      add("mlp.fc1", "linear.input", "mat1", "f32", {T_, h_});
      if (m.activation == "swiglu") {
        add("mlp.act", "mlp.silu.input", "self", "f32", {T_, F_});
        add("mlp.act", "mlp.mul.up", "other", "f32", {T_, F_});
        add("mlp.act", "mlp.mul.silu", "self", "f32", {T_, F_});
      } else {
        add("mlp.act", "mlp.gelu.input", "self", "f32", {T_, F_});
      }
      add("mlp.fc2", "linear.input", "mat1", "f32", {T_, F_});
    }
    if (m.hidden_dropout > 0.0) add("mlp.hidden_dropout", "dropout.mask", "mask", "bool", {T_, h_});
    return out;
  }

  std::vector<SavedEntry> chunk_input() {
    const ProfileRow& r = p_.row("checkpoint.input");
    const int64_t bytes = checked_product({T_, h_, dtype_name_bytes(act_)}, "chunk input bytes");
    return {{"", std::string(r.op), "input", act_, {T_, h_}, bytes, std::string(r.id)}};
  }

 private:
  const SavedProfile& p_;
  const Config& c_;
  int64_t T_ = 0, h_ = 0, a_ = 0, s_ = 0, b_ = 0, F_ = 0;
  std::string act_;
};

}  // namespace

const ProfileRow& SavedProfile::row(std::string_view id) const {
  for (const auto& r : rows)
    if (r.id == id) return r;
  throw Error("saved-tensor profile " + std::string(name) + " has no row '" + std::string(id) + "'");
}

const SavedProfile* find_profile(std::string_view name) {
  for (const SavedProfile* p : {&reference(), &torch_cpu()})
    if (p->name == name) return p;
  return nullptr;
}

std::vector<std::string> profile_names() { return {std::string(kReferenceProfile), "torch-cpu"}; }

int64_t dtype_name_bytes(std::string_view dtype) {
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "bf16" || dtype == "f16") return 2;
  if (dtype == "bool" || dtype == "u8") return 1;
  return 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string inventory_unmodelled(const SavedProfile& p, const Config& c) {
  if (p.rows.empty()) return "profile " + std::string(p.name) + " is rcts's own accounting (totals only)";
  if (c.model.num_moe_experts > 0 || c.model.multi_latent_attention || c.model.gated_delta_net ||
      c.model.flash_attention)
    return "profile " + std::string(p.name) + " covers dense layers without flash attention only";
  if (c.parallel.tensor_model_parallel_size > 1 || c.parallel.pipeline_model_parallel_size > 1)
    return "profile " + std::string(p.name) + " covers one rank only";
  if (c.offload.fine_grained_activation_offloading || c.offload.cpu_offloading)
    return "offload moves saved tensors to the host; the profile has no offload rows";
  return "";
}

std::vector<std::vector<SavedEntry>> stage_inventory(const SavedProfile& p, const Config& c) {
  validate_or_throw(c, "saved-tensor profile");
  if (const std::string why = inventory_unmodelled(p, c); !why.empty()) throw Error("saved-tensor profile: " + why);
  const RecomputeConfig r = effective_recompute(c.recompute);
  const int L = c.model.num_layers;
  TorchCpuLayer t(p, c);
  std::vector<std::vector<SavedEntry>> out(static_cast<size_t>(L));
  if (!c.run.training) return out;  // nothing is saved for a backward that never runs
  if (r.recompute_granularity == "full") {
    const int n = *r.recompute_num_layers;
    for (int i = 0; i < L; ++i) {
      const bool uniform = r.recompute_method == "uniform";
      if (uniform ? i % n == 0 : i < n) out[static_cast<size_t>(i)] = t.chunk_input();
      else if (!uniform) out[static_cast<size_t>(i)] = t.layer({});
    }
    return out;
  }
  const auto modules = r.recompute_granularity == "selective" ? r.recompute_modules : std::vector<std::string>{};
  for (const auto& name : modules)
    RCTS_CHECK(name == "core_attn" || name == "mlp" || name == "layernorm",
               "saved-tensor profile " + std::string(p.name) + ": recompute module '" + name + "' is not modelled");
  for (int i = 0; i < L; ++i) out[static_cast<size_t>(i)] = t.layer(modules);
  return out;
}

}  // namespace rcts
