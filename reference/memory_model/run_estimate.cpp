// The run estimate: per layer, parameter elements, saved activation bytes and
// forward FLOPs from the dimensions; the run multiplies them out. Deliberately
// generous (every TP rank held whole, activations doubled for recompute, gradients
// and offload), so a run that passes the check fits; the test compares it with
// measured peaks.
#include "reference/memory_model/run_estimate.hpp"

#include <algorithm>
#include <cstdio>

#include "reference/core/error.hpp"

namespace rcts {
namespace {

// Save-log, mask-log and counter records of one layer on one micro-batch.
constexpr double kRecordBytesPerLayerPass = 16 * 1024;
// Copies one layer may issue per micro-batch (offload groups, D2H and H2D).
constexpr double kCopiesPerLayerPass = 32;

struct LayerCost {
  double params = 0;       // elements
  double activations = 0;  // bytes saved for backward, one micro-batch
  double scratch = 0;      // largest op buffer, elements
  double flops = 0;        // forward matmul FLOPs + element-wise work
};

// Linear in -> out with a bias: elements and forward FLOPs for `tokens` rows.
void linear(LayerCost& l, double tokens, double in, double out) {
  l.params += in * out + out;
  l.flops += 2 * tokens * in * out;
}

LayerCost layer_cost(const Config& c, bool moe_layer) {
  const auto& m = c.model;
  const double s = m.seq_length, b = m.micro_batch_size, h = m.hidden_size, a = m.num_attention_heads;
  const double d = static_cast<double>(dtype_size(m.activation_dtype));
  const double gate = m.activation == "swiglu" ? 2 : 1;
  const double tokens = s * b, sbh = tokens * h, s2 = a * s * s * b;
  LayerCost l;
  l.params += 4 * h;  // two layernorms
  linear(l, tokens, h, 3 * h);
  linear(l, tokens, h, h);
  l.flops += 4 * b * s * s * h;                  // scores and context
  l.activations += d * 16 * sbh + d * 3 * s2 + 2 * sbh + s2;  // tensors, s^2 tensors, masks
  l.scratch = std::max(sbh, s2);
  auto mlp = [&](double rows, double ffn) {
    linear(l, rows, h, gate * ffn);
    linear(l, rows, ffn, h);
    l.activations += d * 3 * gate * rows * ffn;
    l.scratch = std::max(l.scratch, gate * rows * ffn);
  };
  if (!moe_layer) {
    mlp(tokens, m.ffn_hidden_size);
  } else {
    const double experts = m.num_moe_experts, topk = m.moe_router_topk;
    const double ffn = m.moe_ffn_hidden_size > 0 ? m.moe_ffn_hidden_size : m.ffn_hidden_size;
    linear(l, tokens, h, experts);
    l.activations += 4 * 4 * tokens * experts;  // logits, probabilities, routing maps
    // Every expert's weights; the routed rows add up to topk * tokens.
    const double per_expert = h * gate * ffn + gate * ffn + ffn * h + h;
    l.params += (experts - 1) * per_expert;
    mlp(topk * tokens, ffn);
    l.activations += d * 4 * topk * sbh;  // dispatched and combined copies
    if (m.moe_shared_expert_intermediate_size > 0) mlp(tokens, m.moe_shared_expert_intermediate_size);
  }
  l.flops += 32 * (sbh + s2 + l.scratch);  // element-wise: layernorm, softmax, dropout, activation
  return l;
}

// A gated delta net layer (design §15), added on top of the attention costs it
// replaces, so the estimate stays high: in_proj and out_proj, conv and gate
// parameters, the GDN activations, and the backward's recomputed states.
void add_gdn_cost(const Config& c, LayerCost& l) {
  const auto& m = c.model;
  const double tokens = static_cast<double>(m.seq_length) * m.micro_batch_size, h = m.hidden_size;
  const double d = static_cast<double>(dtype_size(m.activation_dtype));
  const double qk = static_cast<double>(m.linear_num_key_heads) * m.linear_key_head_dim;
  const double vz = static_cast<double>(m.linear_num_value_heads) * m.linear_value_head_dim;
  const double nv = m.linear_num_value_heads, width = 2 * qk + 2 * vz + 2 * nv;
  linear(l, tokens, h, width);
  linear(l, tokens, vz, h);
  l.params += (2 * qk + vz) * m.linear_conv_kernel_dim + 2 * nv + m.linear_value_head_dim;
  // The backward's states S_0..S_s per (b, value head) live in op scratch of the
  // compute type (at least 4 bytes), counted with the activations.
  const double state = static_cast<double>(m.linear_key_head_dim) * m.linear_value_head_dim;
  l.activations += d * tokens * (width + 4 * vz) +
                   std::max(4.0, d) * m.micro_batch_size * nv * (m.seq_length + 2) * state;
  l.scratch = std::max(l.scratch, 3 * tokens * width);
  l.flops += tokens * (2 * width * m.linear_conv_kernel_dim + 8 * nv * state + 32 * width);
}

// A multi-latent-attention layer (design §14), added on top of the dense attention it
// replaces: the down-projections, both latent layernorms, the up-projections and the
// output projection over the MLA head sizes, their saved inputs and their outputs.
void add_mla_cost(const Config& c, LayerCost& l) {
  const auto& m = c.model;
  const double tokens = static_cast<double>(m.seq_length) * m.micro_batch_size, h = m.hidden_size;
  const double d = static_cast<double>(dtype_size(m.activation_dtype));
  const double a = m.num_attention_heads, qr = m.q_lora_rank, kvr = m.kv_lora_rank, dr = m.qk_pos_emb_head_dim;
  const double dq = static_cast<double>(m.qk_head_dim) + dr, dv = m.v_head_dim;
  if (qr > 0) {
    linear(l, tokens, h, qr);
    linear(l, tokens, qr, a * dq);
    l.params += 2 * qr;
  } else {
    linear(l, tokens, h, a * dq);
  }
  linear(l, tokens, h, kvr + dr);
  linear(l, tokens, kvr, a * (m.qk_head_dim + dv));
  linear(l, tokens, a * dv, h);
  l.params += 2 * kvr;
  l.activations += d * tokens * (3 * qr + 3 * kvr + 2 * dr + 3 * a * dq + 3 * a * dv);
  l.scratch = std::max({l.scratch, tokens * std::max(qr, kvr + dr), tokens * a * (dq + dv)});
  l.flops += 32 * tokens * (qr + kvr + a * (dq + dv));
}

std::string bytes_str(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  else if (bytes >= 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.3g MiB", bytes / (1024.0 * 1024.0));
  else
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}
std::string sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

RunEstimate estimate_run(const Config& c) {
  const auto& m = c.model;
  const double P = static_cast<double>(dtype_size(c.param_dtype()));
  const double compute = std::max(4.0, static_cast<double>(dtype_size(m.activation_dtype)));
  const double passes = static_cast<double>(c.run.steps) * c.run.micro_batches;
  const bool offload = c.offload.fine_grained_activation_offloading || c.offload.cpu_offloading;

  double params = 0, stored = 0, scratch = 0, pass_work = 0;
  for (int i = 0; i < m.num_layers; ++i) {
    LayerCost l = layer_cost(c, m.num_moe_experts > 0 && i % m.moe_layer_freq == 0);
    if (c.gdn_layer(i)) add_gdn_cost(c, l);
    else if (m.multi_latent_attention) add_mla_cost(c, l);
    params += l.params;
    stored += l.activations;
    scratch = std::max(scratch, l.scratch);
    // Forward, backward (2x) and at most one recompute forward; eval runs forward only.
    pass_work += std::max(limits::kMinLayerPassWork, (c.run.training ? 4 : 1) * l.flops);
  }
  RunEstimate e;
  e.param_bytes = 4 * P * params;  // value, gradient, and the record's copy of each
  // Recompute re-materialises a chunk while the stored bytes are live, backward holds
  // activation gradients, offload keeps host copies: twice the stored bytes, plus a
  // few op buffers at once.
  e.activation_bytes = 2 * stored + 8 * compute * scratch;
  const double sbh = static_cast<double>(m.seq_length) * m.micro_batch_size * m.hidden_size;
  e.record_bytes = passes * (3 * compute * sbh + m.num_layers * kRecordBytesPerLayerPass);
  e.bytes = e.param_bytes + e.activation_bytes + e.record_bytes;
  e.work = passes * pass_work;
  if (offload && c.offload.link_bandwidth_gbps > 0)
    e.link_seconds = passes * (2 * stored / (c.offload.link_bandwidth_gbps * 1e9) +
                               kCopiesPerLayerPass * m.num_layers * c.offload.link_latency_us * 1e-6);
  return e;
}

void check_run_limits(const Config& c, const std::string& where, const RunLimits& lim) {
  const RunEstimate e = estimate_run(c);
  const std::string shape = " (L=" + std::to_string(c.model.num_layers) + " h=" + std::to_string(c.model.hidden_size) +
                            " s=" + std::to_string(c.model.seq_length) + " b=" +
                            std::to_string(c.model.micro_batch_size) +
                            (c.model.multi_latent_attention
                                 ? " MLA q_lora_rank=" + std::to_string(c.model.q_lora_rank) + " kv_lora_rank=" +
                                       std::to_string(c.model.kv_lora_rank) + " qk_head_dim=" +
                                       std::to_string(c.model.qk_head_dim) + " qk_pos_emb_head_dim=" +
                                       std::to_string(c.model.qk_pos_emb_head_dim) + " v_head_dim=" +
                                       std::to_string(c.model.v_head_dim)
                                 : std::string()) +
                            ", " + std::to_string(c.run.steps) +
                            " step(s) x " + std::to_string(c.run.micro_batches) + " micro-batch(es))";
  if (!(e.bytes <= lim.max_bytes))
    throw Error(where + ": the run would need an estimated " + bytes_str(e.bytes) + " (parameters " +
                bytes_str(e.param_bytes) + ", activations " + bytes_str(e.activation_bytes) + ", run record " +
                bytes_str(e.record_bytes) + ")" + shape + ", over the limit of " + bytes_str(lim.max_bytes) +
                "; raise it with --max-bytes if this is intended");
  if (!(e.work <= lim.max_work))
    throw Error(where + ": the run would take an estimated " + sci(e.work) + " FLOP" + shape + ", over the limit of " +
                sci(lim.max_work) + "; raise it with --max-work if this is intended");
  if (!(e.link_seconds <= lim.max_link_seconds))
    throw Error(where + ": the offload link model would sleep an estimated " + sci(e.link_seconds) +
                " s (link_bandwidth_gbps = " + sci(c.offload.link_bandwidth_gbps) + ", link_latency_us = " +
                sci(c.offload.link_latency_us) + ")" + shape + ", over the limit of " + sci(lim.max_link_seconds) +
                " s; raise it with --max-link-seconds if this is intended");
}

}  // namespace rcts
