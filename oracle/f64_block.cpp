// The float64 oracle; see f64_block.hpp. Matrices are row-major std::vector<double>;
// every loop is the textbook formula, no blocking, no shared kernels.
#include "oracle/f64_block.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "oracle/philox_masks.hpp"

namespace rcts::oracle {

namespace {

using Vec = std::vector<double>;
namespace mo = philox_masks;

// --- data and parameters (docs/decisions.md "Parameters and data") ------------------

uint64_t fnv(const std::string& s) { return mo::fnv1a64(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

// Element i: the 24 high bits of word i % 4 of Philox block i / 4 under key
// seed ^ fnv1a64(key), as u in [0, 1), mapped to (2u - 1) * scale.
Vec uniform(uint64_t seed, const std::string& key, int64_t n, double scale) {
  const uint64_t stream = seed ^ fnv(key);
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const auto w = mo::stream_block(stream, static_cast<uint64_t>(i / 4));
    const double u = static_cast<double>(w[static_cast<size_t>(i % 4)] >> 8) / 16777216.0;
    v[static_cast<size_t>(i)] = (2.0 * u - 1.0) * scale;
  }
  return v;
}

// The value a double takes when stored in `t` (bf16: 8 significant bits, ties to even).
double stored(DType t, double v) {
  switch (t) {
    case DType::f64: return v;
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::bf16: {
      if (v == 0.0 || !std::isfinite(v)) return v;
      int e = 0;
      const double m = std::frexp(v, &e);  // |m| in [0.5, 1)
      return std::ldexp(std::nearbyint(m * 256.0), e - 8);
    }
    default: throw std::invalid_argument("f64 oracle: unsupported dtype");
  }
}

void store_all(DType t, Vec& v) {
  for (auto& x : v) x = stored(t, x);
}

enum class Init { fan_in, ones, zeros };

// --- ops -------------------------------------------------------------------------------

// y (rows, out) = x (rows, in) W^T + b, W (out, in).
Vec linear(const Vec& x, int64_t rows, int64_t in, const Vec& W, int64_t out, const Vec* b) {
  Vec y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b ? (*b)[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += x[static_cast<size_t>(r * in + i)] * W[static_cast<size_t>(o * in + i)];
      y[static_cast<size_t>(r * out + o)] = acc;
    }
  return y;
}

// dx = dy W; dW += dy^T x; db += sum over rows of dy.
Vec linear_back(const Vec& dy, const Vec& x, int64_t rows, int64_t in, int64_t out, const Vec& W, Vec& dW, Vec* db) {
  Vec dx(static_cast<size_t>(rows * in), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      const double g = dy[static_cast<size_t>(r * out + o)];
      if (db) (*db)[static_cast<size_t>(o)] += g;
      for (int64_t i = 0; i < in; ++i) {
        dx[static_cast<size_t>(r * in + i)] += g * W[static_cast<size_t>(o * in + i)];
        dW[static_cast<size_t>(o * in + i)] += g * x[static_cast<size_t>(r * in + i)];
      }
    }
  return dx;
}

// Per row: (x - mean) / sqrt(var + eps) * w + b, biased variance.
Vec layernorm(const Vec& x, int64_t rows, int64_t C, const Vec& w, const Vec& b, double eps) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * C;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += xr[c];
    mean /= static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<double>(C);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < C; ++c)
      y[static_cast<size_t>(r * C + c)] = (xr[c] - mean) * rstd * w[static_cast<size_t>(c)] + b[static_cast<size_t>(c)];
  }
  return y;
}

Vec layernorm_back(const Vec& dy, const Vec& x, int64_t rows, int64_t C, const Vec& w, double eps, Vec& dw, Vec& db) {
  Vec dx(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = x.data() + r * C;
    const double* gr = dy.data() + r * C;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += xr[c];
    mean /= static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<double>(C);
    const double rstd = 1.0 / std::sqrt(var + eps);
    double sum_g = 0, sum_gn = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double n = (xr[c] - mean) * rstd;
      const double g = gr[c] * w[static_cast<size_t>(c)];
      dw[static_cast<size_t>(c)] += gr[c] * n;
      db[static_cast<size_t>(c)] += gr[c];
      sum_g += g;
      sum_gn += g * n;
    }
    for (int64_t c = 0; c < C; ++c) {
      const double n = (xr[c] - mean) * rstd;
      const double g = gr[c] * w[static_cast<size_t>(c)];
      dx[static_cast<size_t>(r * C + c)] = (g - sum_g / static_cast<double>(C) - n * sum_gn / static_cast<double>(C)) * rstd;
    }
  }
  return dx;
}

const double kGeluK0 = std::sqrt(2.0 / std::numbers::pi);
constexpr double kGeluK1 = 0.044715;

double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(kGeluK0 * (x + kGeluK1 * x * x * x))); }
double gelu_grad(double x) {
  const double t = std::tanh(kGeluK0 * (x + kGeluK1 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kGeluK0 * (1.0 + 3.0 * kGeluK1 * x * x);
}
double sigmoid(double a) { return 1.0 / (1.0 + std::exp(-a)); }

// GeLU over (rows, F), or SwiGLU over (rows, 2F) = [a | b] -> silu(a) * b.
Vec activation(const Vec& a, int64_t rows, int64_t F, bool swiglu) {
  Vec g(static_cast<size_t>(rows * F));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t f = 0; f < F; ++f) {
      if (!swiglu) {
        g[static_cast<size_t>(r * F + f)] = gelu(a[static_cast<size_t>(r * F + f)]);
      } else {
        const double x = a[static_cast<size_t>(r * 2 * F + f)], y = a[static_cast<size_t>(r * 2 * F + F + f)];
        g[static_cast<size_t>(r * F + f)] = x * sigmoid(x) * y;
      }
    }
  return g;
}

Vec activation_back(const Vec& dg, const Vec& a, int64_t rows, int64_t F, bool swiglu) {
  Vec da(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t f = 0; f < F; ++f) {
      const double d = dg[static_cast<size_t>(r * F + f)];
      if (!swiglu) {
        da[static_cast<size_t>(r * F + f)] = d * gelu_grad(a[static_cast<size_t>(r * F + f)]);
      } else {
        const double x = a[static_cast<size_t>(r * 2 * F + f)], y = a[static_cast<size_t>(r * 2 * F + F + f)];
        const double s = sigmoid(x);
        da[static_cast<size_t>(r * 2 * F + f)] = d * y * (s + x * s * (1.0 - s));
        da[static_cast<size_t>(r * 2 * F + F + f)] = d * x * s;
      }
    }
  return da;
}

// --- the model -----------------------------------------------------------------------

struct Stream {
  std::string name;
  uint64_t seed = 0;
  uint64_t next = 0;  // first Philox block not drawn yet
};

struct DenseTape {
  Vec a, g;  // fc1 output, activation output
};

struct MoeTape {
  Vec probs;                            // (T, E)
  std::vector<int> topk;                // (T, K)
  std::vector<int64_t> row;             // row of assignment (t, k) in expert layout
  std::vector<int64_t> first, count;    // per expert: first row, rows
  Vec a, g, gd, y;                      // expert layout: fc1 out, act out, dropped, fc2 out
  Vec keep;                             // expert dropout factor per element of g (empty: none)
  Vec sa, sg;                           // shared experts: fc1 out, act out
};

// Gated delta net (design §15): in_proj output, conv inputs/outputs per section, the
// recurrence's states S_0..S_s per (b, value head), the rule output, the norm output.
struct GdnTape {
  Vec mixed, conv_in[3], conv_out[3], states, o, y;
};

struct LayerTape {
  Vec x, ln1, qkv, probs, dropped, merged, h1, ln2;
  GdnTape gdn;
  Vec attn_keep, h1_keep, mlp_keep;  // dropout factors: attention, hidden after attention, hidden after MLP
  DenseTape dense;
  MoeTape moe;
  Vec cq, cqn, kvc, latent, kvn, q, kv, Q, K, V;  // MLA: (T, ·); Q, K (T, a, dq), V (T, a, dv)
};

class Model {
 public:
  Model(const Config& c, const RankCoords& r, F64Run& out)
      : c_(c), m_(c.model), out_(out), T_(static_cast<int64_t>(m_.seq_length) * m_.micro_batch_size),
        h_(m_.hidden_size), a_(m_.num_attention_heads), d_(h_ / a_), swiglu_(m_.activation == "swiglu"),
        mla_(m_.multi_latent_attention), bias_(m_.add_bias_linear) {
    device_ = {"device-default", c.run.seed};
    mp_ = {"model-parallel-rng", c.run.seed + 2718 + static_cast<uint64_t>(r.tp)};
    ep_ = {"expert-parallel-rng", c.run.seed + 1024 + 100 * static_cast<uint64_t>(r.ep) + static_cast<uint64_t>(r.etp)};
    const int blocks = swiglu_ ? 2 : 1;
    for (int l = 0; l < m_.num_layers; ++l) {
      const std::string L = "layers." + std::to_string(l);
      param(L + ".input_layernorm.weight", h_, Init::ones);
      param(L + ".input_layernorm.bias", h_, Init::zeros);
      if (c_.gdn_layer(l)) {
        const int64_t K = m_.linear_conv_kernel_dim;
        param(L + ".gdn.in_proj.weight", gdn_width() * h_, Init::fan_in, h_);
        param(L + ".gdn.conv_q.weight", qk() * K, Init::fan_in, K);
        param(L + ".gdn.conv_k.weight", qk() * K, Init::fan_in, K);
        param(L + ".gdn.conv_v.weight", vz() * K, Init::fan_in, K);
        param(L + ".gdn.A_log", nv(), Init::zeros);
        param(L + ".gdn.dt_bias", nv(), Init::zeros);
        param(L + ".gdn.out_norm.weight", m_.linear_value_head_dim, Init::ones);
        param(L + ".gdn.out_proj.weight", h_ * vz(), Init::fan_in, vz());
      } else if (mla_) {
        const std::string A = L + ".attention.";
        const int64_t qr = m_.q_lora_rank, kvr = m_.kv_lora_rank, dn = m_.qk_head_dim, dr = m_.qk_pos_emb_head_dim,
                      dv = m_.v_head_dim;
        if (qr > 0) {
          param(A + "linear_q_down_proj.weight", qr * h_, Init::fan_in, h_);
          param(A + "q_layernorm.weight", qr, Init::ones);
          param(A + "q_layernorm.bias", qr, Init::zeros);
        }
        param(A + "linear_kv_down_proj.weight", (kvr + dr) * h_, Init::fan_in, h_);
        param(A + "kv_layernorm.weight", kvr, Init::ones);
        param(A + "kv_layernorm.bias", kvr, Init::zeros);
        if (qr > 0)
          param(A + "linear_q_up_proj.weight", a_ * (dn + dr) * qr, Init::fan_in, qr);
        else
          param(A + "linear_q_proj.weight", a_ * (dn + dr) * h_, Init::fan_in, h_);
        param(A + "linear_kv_up_proj.weight", a_ * (dn + dv) * kvr, Init::fan_in, kvr);
        param(A + "proj.weight", h_ * a_ * dv, Init::fan_in, a_ * dv);
        if (bias_) param(A + "proj.bias", h_, Init::fan_in, a_ * dv);
      } else {
        param(L + ".attention.qkv.weight", 3 * h_ * h_, Init::fan_in, h_);
        if (bias_) param(L + ".attention.qkv.bias", 3 * h_, Init::fan_in, h_);
        param(L + ".attention.proj.weight", h_ * h_, Init::fan_in, h_);
        if (bias_) param(L + ".attention.proj.bias", h_, Init::fan_in, h_);
      }
      param(L + ".pre_mlp_layernorm.weight", h_, Init::ones);
      param(L + ".pre_mlp_layernorm.bias", h_, Init::zeros);
      if (is_moe(l)) {
        const int64_t E = m_.num_moe_experts, F = expert_ffn(), S = m_.moe_shared_expert_intermediate_size;
        param(L + ".moe.router.weight", E * h_, Init::fan_in, h_);
        for (int64_t e = 0; e < E; ++e) {
          param(L + ".moe.experts." + std::to_string(e) + ".fc1.weight", blocks * F * h_, Init::fan_in, h_);
          param(L + ".moe.experts." + std::to_string(e) + ".fc2.weight", h_ * F, Init::fan_in, F);
        }
        if (S > 0) {
          param(L + ".moe.shared_experts.fc1.weight", blocks * S * h_, Init::fan_in, h_);
          param(L + ".moe.shared_experts.fc2.weight", h_ * S, Init::fan_in, S);
        }
      } else {
        const int64_t F = m_.ffn_hidden_size;
        param(L + ".mlp.fc1.weight", blocks * F * h_, Init::fan_in, h_);
        if (bias_) param(L + ".mlp.fc1.bias", blocks * F, Init::fan_in, h_);
        param(L + ".mlp.fc2.weight", h_ * F, Init::fan_in, F);
        if (bias_) param(L + ".mlp.fc2.bias", h_, Init::fan_in, F);
      }
    }
    out_.initial = w_;
  }

  void run(const std::optional<Perturbation>& perturb) {
    if (perturb && perturb->name != "input") w_.at(perturb->name).at(static_cast<size_t>(perturb->index)) += perturb->delta;
    const DType act = m_.activation_dtype;
    const bool training = c_.run.training;
    for (int step = 0; step < c_.run.steps; ++step) {
      for (auto& [name, g] : g_) std::fill(g.begin(), g.end(), 0.0);
      for (int mb = 0; mb < c_.run.micro_batches; ++mb) {
        const std::string tag = ".step" + std::to_string(step) + ".mb" + std::to_string(mb);
        Vec x = uniform(c_.run.seed, "input" + tag, T_ * h_, 1.0);
        Vec target = uniform(c_.run.seed ^ 0x5eedull, "target" + tag, T_ * h_, 1.0);
        store_all(act, x);
        store_all(act, target);
        if (perturb && perturb->name == "input" && step == 0 && mb == 0)
          x.at(static_cast<size_t>(perturb->index)) += perturb->delta;
        std::vector<LayerTape> tapes(static_cast<size_t>(m_.num_layers));
        Vec y = x;
        for (int l = 0; l < m_.num_layers; ++l) y = layer_forward(l, y, tapes[static_cast<size_t>(l)]);
        // Loss 0.5 * mean((y - target)^2); d loss / dy = (y - target) / n.
        const double n = static_cast<double>(y.size());
        double sq = 0;
        Vec dy(y.size());
        for (size_t i = 0; i < y.size(); ++i) {
          const double e = y[i] - target[i];
          sq += e * e;
          dy[i] = e / n;
        }
        out_.losses.push_back(0.5 * sq / n);
        out_.outputs.push_back(y);
        if (!training) continue;
        for (int l = m_.num_layers - 1; l >= 0; --l) dy = layer_backward(l, dy, tapes[static_cast<size_t>(l)]);
        out_.input_grads.push_back(dy);
      }
      if (training && step + 1 < c_.run.steps)
        for (auto& [name, w] : w_) {
          const Vec& g = g_.at(name);
          for (size_t i = 0; i < w.size(); ++i) w[i] -= g[i] / 64.0;  // SGD, rate 2^-6
        }
    }
    out_.params = w_;
    out_.grads = g_;
  }

 private:
  bool is_moe(int l) const { return m_.num_moe_experts > 0 && l % m_.moe_layer_freq == 0; }
  int64_t expert_ffn() const { return m_.moe_ffn_hidden_size > 0 ? m_.moe_ffn_hidden_size : m_.ffn_hidden_size; }
  const Vec& W(const std::string& n) const { return w_.at(n); }
  Vec& G(const std::string& n) { return g_.at(n); }
  // A dense linear's bias and its gradient: none without model.add_bias_linear.
  const Vec* B(const std::string& n) const { return bias_ ? &W(n) : nullptr; }
  Vec* GB(const std::string& n) { return bias_ ? &G(n) : nullptr; }

  void param(const std::string& name, int64_t n, Init init, int64_t fan_in = 1) {
    const DType pt = c_.param_dtype();
    Vec v = uniform(c_.run.seed, name, n, init == Init::fan_in ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.1);
    store_all(pt, v);  // the parameter tensor holds the drawn value ...
    if (init == Init::ones)
      for (auto& x : v) x = stored(pt, x + 1.0);  // ... and norm weights sit near 1 (stored again)
    w_[name] = v;
    g_[name] = Vec(v.size(), 0.0);
  }

  // Draws the mask of a dropout over n elements at `site` from `s` and returns the
  // factor each element is multiplied by: 1 / (1 - p) where kept, 0 where dropped.
  // Empty (identity, nothing drawn) when dropout is off: p == 0 or eval.
  Vec dropout(Stream& s, const std::string& site, int64_t n, double p) {
    if (!c_.run.training || p <= 0.0) return {};
    const auto mask = mo::dropout_mask(s.seed, s.next, p, n);
    out_.draws.push_back({site, s.name, s.seed, s.next, n});
    s.next += mo::blocks_for(n);
    Vec f(static_cast<size_t>(n));
    const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
    for (int64_t i = 0; i < n; ++i) f[static_cast<size_t>(i)] = mask[static_cast<size_t>(i)] ? scale : 0.0;
    return f;
  }
  static Vec apply(const Vec& x, const Vec& keep) {
    if (keep.empty()) return x;
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * keep[i];
    return y;
  }

  void side_effect(const std::string& key, double v) { out_.side_effects[key] += v; }

  // Index helpers: tokens are (s, b) row-major, heads (b, a, s, d), scores (b, a, s, s).
  int64_t token(int64_t si, int64_t bi) const { return si * m_.micro_batch_size + bi; }
  int64_t score(int64_t bi, int64_t ai, int64_t i, int64_t j) const {
    const int64_t s = m_.seq_length;
    return ((bi * a_ + ai) * s + i) * s + j;
  }
  // Column of q/k/v (which = 0, 1, 2) of head ai, dim di in the QKV output (3h wide).
  int64_t qkv_col(int which, int64_t ai, int64_t di) const { return which * h_ + ai * d_ + di; }

  Vec layer_forward(int l, const Vec& x, LayerTape& t) {
    const std::string L = "layers." + std::to_string(l);
    const double eps = m_.layernorm_epsilon;
    side_effect(L + ".tokens_seen", static_cast<double>(T_));
    t.x = x;
    t.ln1 = layernorm(x, T_, h_, W(L + ".input_layernorm.weight"), W(L + ".input_layernorm.bias"), eps);
    const Vec attn = c_.gdn_layer(l) ? gdn_forward(L + ".gdn", t.ln1, t.gdn)
                     : mla_ ? mla_forward(L, t) : dense_attention_forward(L, t);
    // Hidden dropout (device default generator at one rank) and the residual.
    t.h1_keep = dropout(device_, L + ".attention.hidden_dropout", T_ * h_, m_.hidden_dropout);
    t.h1 = x;
    const Vec da = apply(attn, t.h1_keep);
    for (size_t i = 0; i < da.size(); ++i) t.h1[i] += da[i];
    t.ln2 = layernorm(t.h1, T_, h_, W(L + ".pre_mlp_layernorm.weight"), W(L + ".pre_mlp_layernorm.bias"), eps);
    const Vec m = is_moe(l) ? moe_forward(L + ".moe", t.ln2, t.moe) : dense_forward(L + ".mlp", t.ln2, t.dense);
    t.mlp_keep = dropout(device_, L + (is_moe(l) ? ".moe" : ".mlp") + ".hidden_dropout", T_ * h_, m_.hidden_dropout);
    Vec out = t.h1;
    const Vec dm = apply(m, t.mlp_keep);
    for (size_t i = 0; i < out.size(); ++i) out[i] += dm[i];
    return out;
  }

  Vec layer_backward(int l, const Vec& dout, LayerTape& t) {
    const std::string L = "layers." + std::to_string(l);
    const double eps = m_.layernorm_epsilon;
    // MLP branch.
    const Vec dm = apply(dout, t.mlp_keep);
    const Vec dln2 = is_moe(l) ? moe_backward(L + ".moe", dm, t.ln2, t.moe) : dense_backward(L + ".mlp", dm, t.ln2, t.dense);
    Vec dh1 = layernorm_back(dln2, t.h1, T_, h_, W(L + ".pre_mlp_layernorm.weight"), eps,
                             G(L + ".pre_mlp_layernorm.weight"), G(L + ".pre_mlp_layernorm.bias"));
    for (size_t i = 0; i < dh1.size(); ++i) dh1[i] += dout[i];
    // Attention (MLA or GDN) branch.
    const Vec dattn = apply(dh1, t.h1_keep);
    const Vec dln1 = c_.gdn_layer(l) ? gdn_backward(L + ".gdn", dattn, t.ln1, t.gdn)
                     : mla_ ? mla_backward(L, dattn, t) : dense_attention_backward(L, dattn, t);
    Vec dx = layernorm_back(dln1, t.x, T_, h_, W(L + ".input_layernorm.weight"), eps, G(L + ".input_layernorm.weight"),
                            G(L + ".input_layernorm.bias"));
    for (size_t i = 0; i < dx.size(); ++i) dx[i] += dh1[i];
    return dx;
  }

  // Multi-latent attention (design §14), written from the math, not from rcts's GEMM
  // layout: RoPE from std::pow/cos/sin, q and k assembled per element.
  double rope_angle(int64_t pos, int64_t j) const {
    const double r = static_cast<double>(m_.qk_pos_emb_head_dim);
    return static_cast<double>(pos) * std::pow(m_.rotary_base, -2.0 * static_cast<double>(j) / r);
  }
  // y = RoPE(x) at `pos` over dr elements (pairs (2j, 2j+1) out to (j, dr/2 + j)).
  void rope(const double* x, double* y, int64_t pos) const {
    const int64_t half = m_.qk_pos_emb_head_dim / 2;
    for (int64_t j = 0; j < half; ++j) {
      const double c = std::cos(rope_angle(pos, j)), sn = std::sin(rope_angle(pos, j));
      y[j] = x[2 * j] * c - x[2 * j + 1] * sn;
      y[half + j] = x[2 * j + 1] * c + x[2 * j] * sn;
    }
  }
  // dx += RoPE's transpose applied to dy.
  void rope_back(const double* dy, double* dx, int64_t pos) const {
    const int64_t half = m_.qk_pos_emb_head_dim / 2;
    for (int64_t j = 0; j < half; ++j) {
      const double c = std::cos(rope_angle(pos, j)), sn = std::sin(rope_angle(pos, j));
      dx[2 * j] += dy[j] * c + dy[half + j] * sn;
      dx[2 * j + 1] += -dy[j] * sn + dy[half + j] * c;
    }
  }

  Vec mla_forward(const std::string& L, LayerTape& t) {
    const std::string A = L + ".attention.";
    const double eps = m_.layernorm_epsilon;
    const int64_t s = m_.seq_length, b = m_.micro_batch_size, qr = m_.q_lora_rank, kvr = m_.kv_lora_rank,
                  dn = m_.qk_head_dim, dr = m_.qk_pos_emb_head_dim, dq = dn + dr, dv = m_.v_head_dim;
    if (qr > 0) {
      t.cq = linear(t.ln1, T_, h_, W(A + "linear_q_down_proj.weight"), qr, nullptr);
      t.cqn = layernorm(t.cq, T_, qr, W(A + "q_layernorm.weight"), W(A + "q_layernorm.bias"), eps);
      t.q = linear(t.cqn, T_, qr, W(A + "linear_q_up_proj.weight"), a_ * dq, nullptr);
    } else {
      t.q = linear(t.ln1, T_, h_, W(A + "linear_q_proj.weight"), a_ * dq, nullptr);
    }
    t.kvc = linear(t.ln1, T_, h_, W(A + "linear_kv_down_proj.weight"), kvr + dr, nullptr);
    t.latent.assign(static_cast<size_t>(T_ * kvr), 0.0);
    for (int64_t r = 0; r < T_; ++r)
      for (int64_t i = 0; i < kvr; ++i) t.latent[static_cast<size_t>(r * kvr + i)] = t.kvc[static_cast<size_t>(r * (kvr + dr) + i)];
    t.kvn = layernorm(t.latent, T_, kvr, W(A + "kv_layernorm.weight"), W(A + "kv_layernorm.bias"), eps);
    t.kv = linear(t.kvn, T_, kvr, W(A + "linear_kv_up_proj.weight"), a_ * (dn + dv), nullptr);
    t.Q.assign(static_cast<size_t>(T_ * a_ * dq), 0.0);
    t.K = t.Q;
    t.V.assign(static_cast<size_t>(T_ * a_ * dv), 0.0);
    for (int64_t r = 0; r < T_; ++r) {
      const int64_t pos = r / b;
      for (int64_t ai = 0; ai < a_; ++ai) {
        double* Q = &t.Q[static_cast<size_t>((r * a_ + ai) * dq)];
        double* K = &t.K[static_cast<size_t>((r * a_ + ai) * dq)];
        const double* q = &t.q[static_cast<size_t>(r * a_ * dq + ai * dq)];
        const double* kv = &t.kv[static_cast<size_t>(r * a_ * (dn + dv) + ai * (dn + dv))];
        for (int64_t i = 0; i < dn; ++i) Q[i] = q[i], K[i] = kv[i];
        rope(q + dn, Q + dn, pos);
        rope(&t.kvc[static_cast<size_t>(r * (kvr + dr) + kvr)], K + dn, pos);
        for (int64_t i = 0; i < dv; ++i) t.V[static_cast<size_t>((r * a_ + ai) * dv + i)] = kv[dn + i];
      }
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(dq));
    t.probs.assign(static_cast<size_t>(b * a_ * s * s), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ai = 0; ai < a_; ++ai)
        for (int64_t i = 0; i < s; ++i) {
          Vec row(static_cast<size_t>(i + 1));
          double mx = -INFINITY;
          for (int64_t j = 0; j <= i; ++j) {
            double dot = 0;
            for (int64_t di = 0; di < dq; ++di)
              dot += t.Q[static_cast<size_t>((token(i, bi) * a_ + ai) * dq + di)] *
                     t.K[static_cast<size_t>((token(j, bi) * a_ + ai) * dq + di)];
            row[static_cast<size_t>(j)] = dot * scale;
            mx = std::max(mx, row[static_cast<size_t>(j)]);
          }
          double z = 0;
          for (auto& v : row) z += (v = std::exp(v - mx));
          for (int64_t j = 0; j <= i; ++j) t.probs[static_cast<size_t>(score(bi, ai, i, j))] = row[static_cast<size_t>(j)] / z;
        }
    t.attn_keep = dropout(mp_, L + ".attention.dropout", b * a_ * s * s, m_.attention_dropout);
    t.dropped = apply(t.probs, t.attn_keep);
    t.merged.assign(static_cast<size_t>(T_ * a_ * dv), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ai = 0; ai < a_; ++ai)
        for (int64_t i = 0; i < s; ++i)
          for (int64_t di = 0; di < dv; ++di) {
            double acc = 0;
            for (int64_t j = 0; j < s; ++j)
              acc += t.dropped[static_cast<size_t>(score(bi, ai, i, j))] * t.V[static_cast<size_t>((token(j, bi) * a_ + ai) * dv + di)];
            t.merged[static_cast<size_t>(token(i, bi) * a_ * dv + ai * dv + di)] = acc;
          }
    return linear(t.merged, T_, a_ * dv, W(A + "proj.weight"), h_, B(A + "proj.bias"));
  }

  Vec mla_backward(const std::string& L, const Vec& dattn, LayerTape& t) {
    const std::string A = L + ".attention.";
    const double eps = m_.layernorm_epsilon;
    const int64_t s = m_.seq_length, b = m_.micro_batch_size, qr = m_.q_lora_rank, kvr = m_.kv_lora_rank,
                  dn = m_.qk_head_dim, dr = m_.qk_pos_emb_head_dim, dq = dn + dr, dv = m_.v_head_dim;
    const Vec dmerged = linear_back(dattn, t.merged, T_, a_ * dv, h_, W(A + "proj.weight"), G(A + "proj.weight"),
                                    GB(A + "proj.bias"));
    const double scale = 1.0 / std::sqrt(static_cast<double>(dq));
    Vec dQ(t.Q.size(), 0.0), dK(t.K.size(), 0.0), dV(t.V.size(), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ai = 0; ai < a_; ++ai) {
        Vec ddrop(static_cast<size_t>(s * s), 0.0);
        for (int64_t i = 0; i < s; ++i)
          for (int64_t j = 0; j < s; ++j)
            for (int64_t di = 0; di < dv; ++di) {
              const double dc = dmerged[static_cast<size_t>(token(i, bi) * a_ * dv + ai * dv + di)];
              const size_t vj = static_cast<size_t>((token(j, bi) * a_ + ai) * dv + di);
              ddrop[static_cast<size_t>(i * s + j)] += dc * t.V[vj];
              dV[vj] += t.dropped[static_cast<size_t>(score(bi, ai, i, j))] * dc;
            }
        for (int64_t i = 0; i < s; ++i) {
          double dot = 0;
          Vec dp(static_cast<size_t>(i + 1));
          for (int64_t j = 0; j <= i; ++j) {
            const size_t k = static_cast<size_t>(score(bi, ai, i, j));
            dp[static_cast<size_t>(j)] = ddrop[static_cast<size_t>(i * s + j)] * (t.attn_keep.empty() ? 1.0 : t.attn_keep[k]);
            dot += dp[static_cast<size_t>(j)] * t.probs[k];
          }
          for (int64_t j = 0; j <= i; ++j) {
            const double p = t.probs[static_cast<size_t>(score(bi, ai, i, j))];
            const double dscore = p * (dp[static_cast<size_t>(j)] - dot) * scale;
            for (int64_t di = 0; di < dq; ++di) {
              const size_t qi = static_cast<size_t>((token(i, bi) * a_ + ai) * dq + di);
              const size_t kj = static_cast<size_t>((token(j, bi) * a_ + ai) * dq + di);
              dQ[qi] += dscore * t.K[kj];
              dK[kj] += dscore * t.Q[qi];
            }
          }
        }
      }
    Vec dq_(t.q.size(), 0.0), dkv(t.kv.size(), 0.0), dkvc(t.kvc.size(), 0.0);
    for (int64_t r = 0; r < T_; ++r) {
      const int64_t pos = r / b;
      for (int64_t ai = 0; ai < a_; ++ai) {
        const double* gQ = &dQ[static_cast<size_t>((r * a_ + ai) * dq)];
        const double* gK = &dK[static_cast<size_t>((r * a_ + ai) * dq)];
        double* gq = &dq_[static_cast<size_t>(r * a_ * dq + ai * dq)];
        double* gkv = &dkv[static_cast<size_t>(r * a_ * (dn + dv) + ai * (dn + dv))];
        for (int64_t i = 0; i < dn; ++i) gq[i] = gQ[i], gkv[i] = gK[i];
        rope_back(gQ + dn, gq + dn, pos);
        rope_back(gK + dn, &dkvc[static_cast<size_t>(r * (kvr + dr) + kvr)], pos);
        for (int64_t i = 0; i < dv; ++i) gkv[dn + i] = dV[static_cast<size_t>((r * a_ + ai) * dv + i)];
      }
    }
    const Vec dkvn = linear_back(dkv, t.kvn, T_, kvr, a_ * (dn + dv), W(A + "linear_kv_up_proj.weight"),
                                 G(A + "linear_kv_up_proj.weight"), nullptr);
    const Vec dlatent = layernorm_back(dkvn, t.latent, T_, kvr, W(A + "kv_layernorm.weight"), eps,
                                       G(A + "kv_layernorm.weight"), G(A + "kv_layernorm.bias"));
    for (int64_t r = 0; r < T_; ++r)
      for (int64_t i = 0; i < kvr; ++i) dkvc[static_cast<size_t>(r * (kvr + dr) + i)] = dlatent[static_cast<size_t>(r * kvr + i)];
    Vec dln1 = linear_back(dkvc, t.ln1, T_, h_, kvr + dr, W(A + "linear_kv_down_proj.weight"),
                           G(A + "linear_kv_down_proj.weight"), nullptr);
    Vec dq_in;
    if (qr > 0) {
      const Vec dcqn = linear_back(dq_, t.cqn, T_, qr, a_ * dq, W(A + "linear_q_up_proj.weight"),
                                   G(A + "linear_q_up_proj.weight"), nullptr);
      const Vec dcq = layernorm_back(dcqn, t.cq, T_, qr, W(A + "q_layernorm.weight"), eps, G(A + "q_layernorm.weight"),
                                     G(A + "q_layernorm.bias"));
      dq_in = linear_back(dcq, t.ln1, T_, h_, qr, W(A + "linear_q_down_proj.weight"), G(A + "linear_q_down_proj.weight"),
                          nullptr);
    } else {
      dq_in = linear_back(dq_, t.ln1, T_, h_, a_ * dq, W(A + "linear_q_proj.weight"), G(A + "linear_q_proj.weight"),
                          nullptr);
    }
    for (size_t i = 0; i < dln1.size(); ++i) dln1[i] += dq_in[i];
    return dln1;
  }

  // Dense self-attention: QKV, core attention, output projection.
  Vec dense_attention_forward(const std::string& L, LayerTape& t) {
    const int64_t s = m_.seq_length, b = m_.micro_batch_size;
    t.qkv = linear(t.ln1, T_, h_, W(L + ".attention.qkv.weight"), 3 * h_, B(L + ".attention.qkv.bias"));
    // Core attention: causal softmax of q k^T / sqrt(d), attention dropout, times v.
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_));
    t.probs.assign(static_cast<size_t>(b * a_ * s * s), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ai = 0; ai < a_; ++ai)
        for (int64_t i = 0; i < s; ++i) {
          Vec row(static_cast<size_t>(i + 1));
          double mx = -INFINITY;
          for (int64_t j = 0; j <= i; ++j) {
            double dot = 0;
            for (int64_t di = 0; di < d_; ++di)
              dot += t.qkv[static_cast<size_t>(token(i, bi) * 3 * h_ + qkv_col(0, ai, di))] *
                     t.qkv[static_cast<size_t>(token(j, bi) * 3 * h_ + qkv_col(1, ai, di))];
            row[static_cast<size_t>(j)] = dot * scale;
            mx = std::max(mx, row[static_cast<size_t>(j)]);
          }
          double z = 0;
          for (auto& v : row) z += (v = std::exp(v - mx));
          for (int64_t j = 0; j <= i; ++j) t.probs[static_cast<size_t>(score(bi, ai, i, j))] = row[static_cast<size_t>(j)] / z;
        }
    t.attn_keep = dropout(mp_, L + ".attention.dropout", b * a_ * s * s, m_.attention_dropout);
    t.dropped = apply(t.probs, t.attn_keep);
    t.merged.assign(static_cast<size_t>(T_ * h_), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ai = 0; ai < a_; ++ai)
        for (int64_t i = 0; i < s; ++i)
          for (int64_t di = 0; di < d_; ++di) {
            double acc = 0;
            for (int64_t j = 0; j < s; ++j)
              acc += t.dropped[static_cast<size_t>(score(bi, ai, i, j))] *
                     t.qkv[static_cast<size_t>(token(j, bi) * 3 * h_ + qkv_col(2, ai, di))];
            t.merged[static_cast<size_t>(token(i, bi) * h_ + ai * d_ + di)] = acc;
          }
    return linear(t.merged, T_, h_, W(L + ".attention.proj.weight"), h_, B(L + ".attention.proj.bias"));
  }
  Vec dense_attention_backward(const std::string& L, const Vec& dattn, LayerTape& t) {
    const int64_t s = m_.seq_length, b = m_.micro_batch_size;
    const Vec dmerged = linear_back(dattn, t.merged, T_, h_, h_, W(L + ".attention.proj.weight"),
                                    G(L + ".attention.proj.weight"), GB(L + ".attention.proj.bias"));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d_));
    Vec dqkv(static_cast<size_t>(T_ * 3 * h_), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t ai = 0; ai < a_; ++ai) {
        // d(dropped)[i][j] = dctx[i] . v[j];  dv[j] += dropped[i][j] dctx[i]
        Vec ddrop(static_cast<size_t>(s * s), 0.0);
        for (int64_t i = 0; i < s; ++i)
          for (int64_t j = 0; j < s; ++j)
            for (int64_t di = 0; di < d_; ++di) {
              const double dc = dmerged[static_cast<size_t>(token(i, bi) * h_ + ai * d_ + di)];
              ddrop[static_cast<size_t>(i * s + j)] += dc * t.qkv[static_cast<size_t>(token(j, bi) * 3 * h_ + qkv_col(2, ai, di))];
              dqkv[static_cast<size_t>(token(j, bi) * 3 * h_ + qkv_col(2, ai, di))] +=
                  t.dropped[static_cast<size_t>(score(bi, ai, i, j))] * dc;
            }
        for (int64_t i = 0; i < s; ++i) {
          // Dropout, then softmax backward over the causal row, then the score scale.
          double dot = 0;
          Vec dp(static_cast<size_t>(i + 1));
          for (int64_t j = 0; j <= i; ++j) {
            const size_t k = static_cast<size_t>(score(bi, ai, i, j));
            dp[static_cast<size_t>(j)] = ddrop[static_cast<size_t>(i * s + j)] * (t.attn_keep.empty() ? 1.0 : t.attn_keep[k]);
            dot += dp[static_cast<size_t>(j)] * t.probs[k];
          }
          for (int64_t j = 0; j <= i; ++j) {
            const double p = t.probs[static_cast<size_t>(score(bi, ai, i, j))];
            const double dscore = p * (dp[static_cast<size_t>(j)] - dot) * scale;
            for (int64_t di = 0; di < d_; ++di) {
              dqkv[static_cast<size_t>(token(i, bi) * 3 * h_ + qkv_col(0, ai, di))] +=
                  dscore * t.qkv[static_cast<size_t>(token(j, bi) * 3 * h_ + qkv_col(1, ai, di))];
              dqkv[static_cast<size_t>(token(j, bi) * 3 * h_ + qkv_col(1, ai, di))] +=
                  dscore * t.qkv[static_cast<size_t>(token(i, bi) * 3 * h_ + qkv_col(0, ai, di))];
            }
          }
        }
      }
    return linear_back(dqkv, t.ln1, T_, h_, 3 * h_, W(L + ".attention.qkv.weight"),
                                 G(L + ".attention.qkv.weight"), GB(L + ".attention.qkv.bias"));
  }

  // --- gated delta net (design §15), textbook loops in double, libm allowed ---------
  int64_t qk() const { return int64_t{m_.linear_num_key_heads} * m_.linear_key_head_dim; }
  int64_t vz() const { return int64_t{m_.linear_num_value_heads} * m_.linear_value_head_dim; }
  int64_t nv() const { return m_.linear_num_value_heads; }
  int64_t gdn_width() const { return 2 * qk() + 2 * vz() + 2 * nv(); }
  static double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }

  // Section `which` (0 q, 1 k, 2 v) of the in_proj output: (T, width) token layout.
  Vec gdn_section(const Vec& mixed, int which) const {
    const int64_t w = which == 2 ? vz() : qk(), col0 = which * qk();
    Vec out(static_cast<size_t>(T_ * w));
    for (int64_t tok = 0; tok < T_; ++tok)
      for (int64_t c = 0; c < w; ++c) out[static_cast<size_t>(tok * w + c)] = mixed[static_cast<size_t>(tok * gdn_width() + col0 + c)];
    return out;
  }
  // Causal depthwise conv over the sequence of each channel, zero history.
  double conv_pre(const Vec& x, const Vec& w, int64_t C, int64_t si, int64_t bi, int64_t c) const {
    const int64_t K = m_.linear_conv_kernel_dim;
    double acc = 0;
    for (int64_t j = 0; j < K; ++j) {
      const int64_t src = si - (K - 1) + j;
      if (src >= 0) acc += w[static_cast<size_t>(c * K + j)] * x[static_cast<size_t>(token(src, bi) * C + c)];
    }
    return acc;
  }
  double gdn_gate(int64_t tok, int64_t hv, const Vec& mixed, const std::string& P, double& beta, double& A, double& xg) const {
    const int64_t base = tok * gdn_width() + 2 * qk() + 2 * vz();
    beta = sigmoid(mixed[static_cast<size_t>(base + hv)]);
    A = std::exp(W(P + ".A_log")[static_cast<size_t>(hv)]);
    xg = mixed[static_cast<size_t>(base + nv() + hv)] + W(P + ".dt_bias")[static_cast<size_t>(hv)];
    return -A * softplus(xg);
  }
  // l2-normalised row (FLA's eps 1e-6) of width D at x.
  static Vec l2n(const double* x, int64_t D) {
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += x[i] * x[i];
    Vec y(static_cast<size_t>(D));
    for (int64_t i = 0; i < D; ++i) y[static_cast<size_t>(i)] = x[i] / std::sqrt(ss + 1e-6);
    return y;
  }

  Vec gdn_forward(const std::string& P, const Vec& x, GdnTape& t) {
    const int64_t s = m_.seq_length, b = m_.micro_batch_size, dk = m_.linear_key_head_dim, dv = m_.linear_value_head_dim;
    const int64_t NV = nv(), ratio = nv() / m_.linear_num_key_heads;
    t.mixed = linear(x, T_, h_, W(P + ".in_proj.weight"), gdn_width(), nullptr);
    const char* conv[3] = {".conv_q.weight", ".conv_k.weight", ".conv_v.weight"};
    for (int which = 0; which < 3; ++which) {
      t.conv_in[which] = gdn_section(t.mixed, which);
      const int64_t C = which == 2 ? vz() : qk();
      t.conv_out[which].assign(static_cast<size_t>(T_ * C), 0.0);
      for (int64_t si = 0; si < s; ++si)
        for (int64_t bi = 0; bi < b; ++bi)
          for (int64_t c = 0; c < C; ++c) {
            const double p = conv_pre(t.conv_in[which], W(P + conv[which]), C, si, bi, c);
            t.conv_out[which][static_cast<size_t>(token(si, bi) * C + c)] = p * sigmoid(p);
          }
    }
    const int64_t DD = dk * dv;
    t.states.assign(static_cast<size_t>(b * NV * (s + 1) * DD), 0.0);
    t.o.assign(static_cast<size_t>(T_ * vz()), 0.0);
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hv = 0; hv < NV; ++hv) {
        const int64_t hk = hv / ratio;
        double* S0 = t.states.data() + (bi * NV + hv) * (s + 1) * DD;
        for (int64_t si = 0; si < s; ++si) {
          const int64_t tok = token(si, bi);
          const Vec q = l2n(t.conv_out[0].data() + tok * qk() + hk * dk, dk);
          const Vec k = l2n(t.conv_out[1].data() + tok * qk() + hk * dk, dk);
          const double* v = t.conv_out[2].data() + tok * vz() + hv * dv;
          double beta, A, xg;
          const double decay = std::exp(gdn_gate(tok, hv, t.mixed, P, beta, A, xg));
          const double* Sp = S0 + si * DD;
          double* St = S0 + (si + 1) * DD;
          for (int64_t j = 0; j < dv; ++j) {
            double u = 0;
            for (int64_t i = 0; i < dk; ++i) u += decay * Sp[i * dv + j] * k[static_cast<size_t>(i)];
            for (int64_t i = 0; i < dk; ++i) St[i * dv + j] = decay * Sp[i * dv + j] + beta * k[static_cast<size_t>(i)] * (v[j] - u);
            double o = 0;
            for (int64_t i = 0; i < dk; ++i) o += St[i * dv + j] * q[static_cast<size_t>(i)];
            t.o[static_cast<size_t>(tok * vz() + hv * dv + j)] = o / std::sqrt(static_cast<double>(dk));
          }
        }
      }
    // Gated RMSNorm per value head, then out_proj.
    t.y.assign(t.o.size(), 0.0);
    const Vec& w = W(P + ".out_norm.weight");
    for (int64_t tok = 0; tok < T_; ++tok)
      for (int64_t hv = 0; hv < NV; ++hv) {
        const double* o = t.o.data() + tok * vz() + hv * dv;
        double ss = 0;
        for (int64_t j = 0; j < dv; ++j) ss += o[j] * o[j];
        const double r = 1.0 / std::sqrt(ss / static_cast<double>(dv) + m_.layernorm_epsilon);
        for (int64_t j = 0; j < dv; ++j) {
          const double z = t.mixed[static_cast<size_t>(tok * gdn_width() + 2 * qk() + vz() + hv * dv + j)];
          t.y[static_cast<size_t>(tok * vz() + hv * dv + j)] = o[j] * r * w[static_cast<size_t>(j)] * z * sigmoid(z);
        }
      }
    return linear(t.y, T_, vz(), W(P + ".out_proj.weight"), h_, nullptr);
  }

  Vec gdn_backward(const std::string& P, const Vec& dout, const Vec& x, const GdnTape& t) {
    const int64_t s = m_.seq_length, b = m_.micro_batch_size, dk = m_.linear_key_head_dim, dv = m_.linear_value_head_dim;
    const int64_t NV = nv(), ratio = nv() / m_.linear_num_key_heads, Wd = gdn_width(), DD = dk * dv;
    const Vec dy = linear_back(dout, t.y, T_, vz(), h_, W(P + ".out_proj.weight"), G(P + ".out_proj.weight"), nullptr);
    Vec dmixed(static_cast<size_t>(T_ * Wd), 0.0);
    Vec dO(t.o.size(), 0.0);
    const Vec& w = W(P + ".out_norm.weight");
    Vec& dw = G(P + ".out_norm.weight");
    for (int64_t tok = 0; tok < T_; ++tok)
      for (int64_t hv = 0; hv < NV; ++hv) {
        const double* o = t.o.data() + tok * vz() + hv * dv;
        const double* g = dy.data() + tok * vz() + hv * dv;
        double ss = 0;
        for (int64_t j = 0; j < dv; ++j) ss += o[j] * o[j];
        const double r = 1.0 / std::sqrt(ss / static_cast<double>(dv) + m_.layernorm_epsilon);
        double dot = 0;  // sum_j dn_j n_j
        for (int64_t j = 0; j < dv; ++j) {
          const int64_t zc = tok * Wd + 2 * qk() + vz() + hv * dv + j;
          const double z = t.mixed[static_cast<size_t>(zc)], sz = sigmoid(z);
          const double n = o[j] * r;
          dw[static_cast<size_t>(j)] += g[j] * z * sz * n;
          dmixed[static_cast<size_t>(zc)] = g[j] * n * w[static_cast<size_t>(j)] * (sz + z * sz * (1.0 - sz));
          dot += g[j] * z * sz * w[static_cast<size_t>(j)] * n;
        }
        for (int64_t j = 0; j < dv; ++j) {
          const double z = t.mixed[static_cast<size_t>(tok * Wd + 2 * qk() + vz() + hv * dv + j)];
          const double dn = g[j] * z * sigmoid(z) * w[static_cast<size_t>(j)];
          dO[static_cast<size_t>(tok * vz() + hv * dv + j)] = r * (dn - o[j] * r * dot / static_cast<double>(dv));
        }
      }
    // The recurrence backwards, per (b, value head), from the stored states.
    Vec dconv[3] = {Vec(t.conv_out[0].size(), 0.0), Vec(t.conv_out[1].size(), 0.0), Vec(t.conv_out[2].size(), 0.0)};
    Vec& dA = G(P + ".A_log");
    Vec& ddt = G(P + ".dt_bias");
    const double scale = 1.0 / std::sqrt(static_cast<double>(dk));
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hv = 0; hv < NV; ++hv) {
        const int64_t hk = hv / ratio;
        const double* S0 = t.states.data() + (bi * NV + hv) * (s + 1) * DD;
        Vec dS(static_cast<size_t>(DD), 0.0);
        for (int64_t si = s - 1; si >= 0; --si) {
          const int64_t tok = token(si, bi);
          const double* qr = t.conv_out[0].data() + tok * qk() + hk * dk;
          const double* kr = t.conv_out[1].data() + tok * qk() + hk * dk;
          const Vec q = l2n(qr, dk), k = l2n(kr, dk);
          const double* v = t.conv_out[2].data() + tok * vz() + hv * dv;
          double beta, A, xg;
          const double g = gdn_gate(tok, hv, t.mixed, P, beta, A, xg), decay = std::exp(g);
          const double* Sp = S0 + si * DD;
          const double* St = S0 + (si + 1) * DD;
          const double* dov = dO.data() + tok * vz() + hv * dv;
          Vec dq(static_cast<size_t>(dk), 0.0), dkk(static_cast<size_t>(dk), 0.0);
          for (int64_t i = 0; i < dk; ++i)
            for (int64_t j = 0; j < dv; ++j) {
              dS[static_cast<size_t>(i * dv + j)] += q[static_cast<size_t>(i)] * scale * dov[j];
              dq[static_cast<size_t>(i)] += St[i * dv + j] * dov[j] * scale;
            }
          double dbeta = 0, dg = 0;
          for (int64_t j = 0; j < dv; ++j) {
            double u = 0, dd = 0;
            for (int64_t i = 0; i < dk; ++i) {
              u += decay * Sp[i * dv + j] * k[static_cast<size_t>(i)];
              dd += dS[static_cast<size_t>(i * dv + j)] * k[static_cast<size_t>(i)];
            }
            const double delta = beta * (v[j] - u);
            dbeta += dd * (v[j] - u);
            dconv[2][static_cast<size_t>(tok * vz() + hv * dv + j)] += beta * dd;
            for (int64_t i = 0; i < dk; ++i) {
              const double shat = decay * Sp[i * dv + j];
              dkk[static_cast<size_t>(i)] += dS[static_cast<size_t>(i * dv + j)] * delta - beta * dd * shat;
              const double dshat = dS[static_cast<size_t>(i * dv + j)] - beta * dd * k[static_cast<size_t>(i)];
              dg += dshat * shat;
              dS[static_cast<size_t>(i * dv + j)] = decay * dshat;
            }
          }
          // l2norm backward into the conv outputs (grouped value heads add up).
          for (auto [row, y, dyv, which] : {std::tuple{qr, &q, &dq, 0}, std::tuple{kr, &k, &dkk, 1}}) {
            double ss = 0, dot = 0;
            for (int64_t i = 0; i < dk; ++i) ss += row[i] * row[i];
            for (int64_t i = 0; i < dk; ++i) dot += (*y)[static_cast<size_t>(i)] * (*dyv)[static_cast<size_t>(i)];
            for (int64_t i = 0; i < dk; ++i)
              dconv[which][static_cast<size_t>(tok * qk() + hk * dk + i)] +=
                  ((*dyv)[static_cast<size_t>(i)] - (*y)[static_cast<size_t>(i)] * dot) / std::sqrt(ss + 1e-6);
          }
          const int64_t base = tok * Wd + 2 * qk() + 2 * vz();
          dmixed[static_cast<size_t>(base + hv)] = dbeta * beta * (1.0 - beta);
          const double dxg = dg * -A * (xg > 20 ? 1.0 : sigmoid(xg));
          dmixed[static_cast<size_t>(base + nv() + hv)] = dxg;
          dA[static_cast<size_t>(hv)] += dg * g;
          ddt[static_cast<size_t>(hv)] += dxg;
        }
      }
    // Conv + SiLU backward per section into the in_proj output.
    const char* conv[3] = {".conv_q.weight", ".conv_k.weight", ".conv_v.weight"};
    const int64_t K = m_.linear_conv_kernel_dim;
    for (int which = 0; which < 3; ++which) {
      const int64_t C = which == 2 ? vz() : qk(), col0 = which * qk();
      const Vec& cw = W(P + conv[which]);
      Vec& dcw = G(P + conv[which]);
      for (int64_t si = 0; si < s; ++si)
        for (int64_t bi = 0; bi < b; ++bi)
          for (int64_t c = 0; c < C; ++c) {
            const double p = conv_pre(t.conv_in[which], cw, C, si, bi, c), sp = sigmoid(p);
            const double dp = dconv[which][static_cast<size_t>(token(si, bi) * C + c)] * (sp + p * sp * (1.0 - sp));
            for (int64_t j = 0; j < K; ++j) {
              const int64_t src = si - (K - 1) + j;
              if (src < 0) continue;
              dcw[static_cast<size_t>(c * K + j)] += dp * t.conv_in[which][static_cast<size_t>(token(src, bi) * C + c)];
              dmixed[static_cast<size_t>(token(src, bi) * Wd + col0 + c)] += dp * cw[static_cast<size_t>(c * K + j)];
            }
          }
    }
    return linear_back(dmixed, x, T_, h_, Wd, W(P + ".in_proj.weight"), G(P + ".in_proj.weight"), nullptr);
  }

  // Dense MLP (or the bias-free shared experts): fc1 -> GeLU / SwiGLU -> fc2.
  Vec dense_forward(const std::string& P, const Vec& x, DenseTape& t, bool shared = false) {
    const int64_t F = shared ? m_.moe_shared_expert_intermediate_size : m_.ffn_hidden_size, blocks = swiglu_ ? 2 : 1;
    t.a = linear(x, T_, h_, W(P + ".fc1.weight"), blocks * F, shared ? nullptr : B(P + ".fc1.bias"));
    t.g = activation(t.a, T_, F, swiglu_);
    return linear(t.g, T_, F, W(P + ".fc2.weight"), h_, shared ? nullptr : B(P + ".fc2.bias"));
  }
  Vec dense_backward(const std::string& P, const Vec& dy, const Vec& x, const DenseTape& t, bool shared = false) {
    const int64_t F = shared ? m_.moe_shared_expert_intermediate_size : m_.ffn_hidden_size, blocks = swiglu_ ? 2 : 1;
    const Vec dg = linear_back(dy, t.g, T_, F, h_, W(P + ".fc2.weight"), G(P + ".fc2.weight"), shared ? nullptr : GB(P + ".fc2.bias"));
    const Vec da = activation_back(dg, t.a, T_, F, swiglu_);
    return linear_back(da, x, T_, h_, blocks * F, W(P + ".fc1.weight"), G(P + ".fc1.weight"), shared ? nullptr : GB(P + ".fc1.bias"));
  }

  // MoE (moe.hpp, moe_router.hpp, moe_experts.hpp at one rank): softmax router, top-k
  // by (prob desc, index asc), weights = the top-k probabilities, assignments in send
  // order (expert, token, slot), experts fc1 -> act [-> expert dropout] -> fc2 without
  // biases, out[t] = sum_k w[t][k] y_{t,k} + shared experts(x)[t].
  Vec moe_forward(const std::string& P, const Vec& x, MoeTape& t) {
    const int64_t E = m_.num_moe_experts, K = m_.moe_router_topk, F = expert_ffn(), blocks = swiglu_ ? 2 : 1;
    const Vec logits = linear(x, T_, h_, W(P + ".router.weight"), E, nullptr);
    t.probs.assign(static_cast<size_t>(T_ * E), 0.0);
    t.topk.assign(static_cast<size_t>(T_ * K), 0);
    for (int64_t tok = 0; tok < T_; ++tok) {
      double mx = -INFINITY, z = 0;
      for (int64_t e = 0; e < E; ++e) mx = std::max(mx, logits[static_cast<size_t>(tok * E + e)]);
      for (int64_t e = 0; e < E; ++e) z += std::exp(logits[static_cast<size_t>(tok * E + e)] - mx);
      for (int64_t e = 0; e < E; ++e)
        t.probs[static_cast<size_t>(tok * E + e)] = std::exp(logits[static_cast<size_t>(tok * E + e)] - mx) / z;
      std::vector<bool> taken(static_cast<size_t>(E), false);
      for (int64_t k = 0; k < K; ++k) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; ++e)
          if (!taken[static_cast<size_t>(e)] &&
              (best < 0 || t.probs[static_cast<size_t>(tok * E + e)] > t.probs[static_cast<size_t>(tok * E + best)]))
            best = e;
        taken[static_cast<size_t>(best)] = true;
        t.topk[static_cast<size_t>(tok * K + k)] = static_cast<int>(best);
      }
      // How close the choice was: the last chosen probability minus the best unchosen one.
      double unchosen = -INFINITY;
      for (int64_t e = 0; e < E; ++e)
        if (!taken[static_cast<size_t>(e)]) unchosen = std::max(unchosen, t.probs[static_cast<size_t>(tok * E + e)]);
      if (K < E)
        out_.min_router_margin = std::min(
            out_.min_router_margin, t.probs[static_cast<size_t>(tok * E + t.topk[static_cast<size_t>(tok * K + K - 1)])] - unchosen);
    }
    if (c_.run.training) {
      // Switch aux loss: (coeff * E) * sum_e f_e * P_e (a side effect, no gradient).
      double aux = 0;
      for (int64_t e = 0; e < E; ++e) {
        double count = 0, psum = 0;
        for (int64_t i = 0; i < T_ * K; ++i) count += t.topk[static_cast<size_t>(i)] == e ? 1 : 0;
        for (int64_t tok = 0; tok < T_; ++tok) psum += t.probs[static_cast<size_t>(tok * E + e)];
        aux += (count / static_cast<double>(T_ * K)) * (psum / static_cast<double>(T_));
      }
      side_effect(P + ".aux_loss", m_.moe_aux_loss_coeff * static_cast<double>(E) * aux);
    }
    // Expert layout: expert major, then (token, slot).
    t.row.assign(static_cast<size_t>(T_ * K), -1);
    t.first.assign(static_cast<size_t>(E), 0);
    t.count.assign(static_cast<size_t>(E), 0);
    std::vector<int64_t> order;  // expert-layout row -> token
    for (int64_t e = 0; e < E; ++e) {
      t.first[static_cast<size_t>(e)] = static_cast<int64_t>(order.size());
      for (int64_t tok = 0; tok < T_; ++tok)
        for (int64_t k = 0; k < K; ++k)
          if (t.topk[static_cast<size_t>(tok * K + k)] == e) {
            t.row[static_cast<size_t>(tok * K + k)] = static_cast<int64_t>(order.size());
            order.push_back(tok);
          }
      t.count[static_cast<size_t>(e)] = static_cast<int64_t>(order.size()) - t.first[static_cast<size_t>(e)];
    }
    const int64_t R = static_cast<int64_t>(order.size());
    t.a.assign(static_cast<size_t>(R * blocks * F), 0.0);
    t.g.assign(static_cast<size_t>(R * F), 0.0);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t n = t.count[static_cast<size_t>(e)], r0 = t.first[static_cast<size_t>(e)];
      Vec xe(static_cast<size_t>(n * h_));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t i = 0; i < h_; ++i)
          xe[static_cast<size_t>(r * h_ + i)] = x[static_cast<size_t>(order[static_cast<size_t>(r0 + r)] * h_ + i)];
      const Vec a = linear(xe, n, h_, W(P + ".experts." + std::to_string(e) + ".fc1.weight"), blocks * F, nullptr);
      const Vec g = activation(a, n, F, swiglu_);
      std::copy(a.begin(), a.end(), t.a.begin() + r0 * blocks * F);
      std::copy(g.begin(), g.end(), t.g.begin() + r0 * F);
    }
    // Expert dropout from expert-parallel-rng: one draw over all rows (grouped GEMM) or
    // one per expert that has rows, in expert order.
    if (m_.moe_grouped_gemm) {
      t.keep = dropout(ep_, P + ".experts.dropout", R * F, m_.moe_expert_dropout);
    } else if (c_.run.training && m_.moe_expert_dropout > 0) {
      t.keep.clear();
      for (int64_t e = 0; e < E; ++e) {
        if (t.count[static_cast<size_t>(e)] == 0) continue;
        const Vec k = dropout(ep_, P + ".experts." + std::to_string(e) + ".dropout", t.count[static_cast<size_t>(e)] * F,
                              m_.moe_expert_dropout);
        t.keep.insert(t.keep.end(), k.begin(), k.end());
      }
    }
    t.gd = apply(t.g, t.keep);
    t.y.assign(static_cast<size_t>(R * h_), 0.0);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t n = t.count[static_cast<size_t>(e)], r0 = t.first[static_cast<size_t>(e)];
      const Vec ge(t.gd.begin() + r0 * F, t.gd.begin() + (r0 + n) * F);
      const Vec ye = linear(ge, n, F, W(P + ".experts." + std::to_string(e) + ".fc2.weight"), h_, nullptr);
      std::copy(ye.begin(), ye.end(), t.y.begin() + r0 * h_);
    }
    Vec out(static_cast<size_t>(T_ * h_), 0.0);
    if (m_.moe_shared_expert_intermediate_size > 0) {
      DenseTape st;
      out = dense_forward(P + ".shared_experts", x, st, /*shared=*/true);
      t.sa = std::move(st.a);
      t.sg = std::move(st.g);
    }
    for (int64_t tok = 0; tok < T_; ++tok)
      for (int64_t k = 0; k < K; ++k) {
        const double w = t.probs[static_cast<size_t>(tok * E + t.topk[static_cast<size_t>(tok * K + k)])];
        const int64_t r = t.row[static_cast<size_t>(tok * K + k)];
        for (int64_t i = 0; i < h_; ++i) out[static_cast<size_t>(tok * h_ + i)] += w * t.y[static_cast<size_t>(r * h_ + i)];
      }
    return out;
  }

  Vec moe_backward(const std::string& P, const Vec& dy, const Vec& x, const MoeTape& t) {
    const int64_t E = m_.num_moe_experts, K = m_.moe_router_topk, F = expert_ffn(), blocks = swiglu_ ? 2 : 1;
    const int64_t R = static_cast<int64_t>(t.y.size()) / h_;
    Vec dye(static_cast<size_t>(R * h_), 0.0);
    Vec dprobs(static_cast<size_t>(T_ * E), 0.0);
    for (int64_t tok = 0; tok < T_; ++tok)
      for (int64_t k = 0; k < K; ++k) {
        const int e = t.topk[static_cast<size_t>(tok * K + k)];
        const double w = t.probs[static_cast<size_t>(tok * E + e)];
        const int64_t r = t.row[static_cast<size_t>(tok * K + k)];
        double dw = 0;
        for (int64_t i = 0; i < h_; ++i) {
          dye[static_cast<size_t>(r * h_ + i)] = w * dy[static_cast<size_t>(tok * h_ + i)];
          dw += dy[static_cast<size_t>(tok * h_ + i)] * t.y[static_cast<size_t>(r * h_ + i)];
        }
        dprobs[static_cast<size_t>(tok * E + e)] = dw;
      }
    Vec dxe(static_cast<size_t>(R * h_), 0.0);
    Vec dgd(static_cast<size_t>(R * F), 0.0);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t n = t.count[static_cast<size_t>(e)], r0 = t.first[static_cast<size_t>(e)];
      const std::string X = P + ".experts." + std::to_string(e);
      const Vec dy_e(dye.begin() + r0 * h_, dye.begin() + (r0 + n) * h_);
      const Vec g_e(t.gd.begin() + r0 * F, t.gd.begin() + (r0 + n) * F);
      const Vec dg = linear_back(dy_e, g_e, n, F, h_, W(X + ".fc2.weight"), G(X + ".fc2.weight"), nullptr);
      std::copy(dg.begin(), dg.end(), dgd.begin() + r0 * F);
    }
    const Vec dg = apply(dgd, t.keep);
    const Vec da = activation_back(dg, t.a, R, F, swiglu_);
    for (int64_t e = 0; e < E; ++e) {
      const int64_t n = t.count[static_cast<size_t>(e)], r0 = t.first[static_cast<size_t>(e)];
      const std::string X = P + ".experts." + std::to_string(e);
      Vec xe(static_cast<size_t>(n * h_));
      for (int64_t tok = 0; tok < T_; ++tok)
        for (int64_t k = 0; k < K; ++k) {
          const int64_t r = t.row[static_cast<size_t>(tok * K + k)];
          if (r < r0 || r >= r0 + n) continue;
          for (int64_t i = 0; i < h_; ++i) xe[static_cast<size_t>((r - r0) * h_ + i)] = x[static_cast<size_t>(tok * h_ + i)];
        }
      const Vec da_e(da.begin() + r0 * blocks * F, da.begin() + (r0 + n) * blocks * F);
      const Vec dx_e = linear_back(da_e, xe, n, h_, blocks * F, W(X + ".fc1.weight"), G(X + ".fc1.weight"), nullptr);
      std::copy(dx_e.begin(), dx_e.end(), dxe.begin() + r0 * h_);
    }
    Vec dx(static_cast<size_t>(T_ * h_), 0.0);
    for (int64_t tok = 0; tok < T_; ++tok)
      for (int64_t k = 0; k < K; ++k) {
        const int64_t r = t.row[static_cast<size_t>(tok * K + k)];
        for (int64_t i = 0; i < h_; ++i) dx[static_cast<size_t>(tok * h_ + i)] += dxe[static_cast<size_t>(r * h_ + i)];
      }
    // Router: softmax backward, then the logits' linear map.
    Vec dlogits(static_cast<size_t>(T_ * E));
    for (int64_t tok = 0; tok < T_; ++tok) {
      double dot = 0;
      for (int64_t e = 0; e < E; ++e) dot += dprobs[static_cast<size_t>(tok * E + e)] * t.probs[static_cast<size_t>(tok * E + e)];
      for (int64_t e = 0; e < E; ++e)
        dlogits[static_cast<size_t>(tok * E + e)] =
            t.probs[static_cast<size_t>(tok * E + e)] * (dprobs[static_cast<size_t>(tok * E + e)] - dot);
    }
    const Vec dxr = linear_back(dlogits, x, T_, h_, E, W(P + ".router.weight"), G(P + ".router.weight"), nullptr);
    for (size_t i = 0; i < dx.size(); ++i) dx[i] += dxr[i];
    if (m_.moe_shared_expert_intermediate_size > 0) {
      const DenseTape st{t.sa, t.sg};
      const Vec dxs = dense_backward(P + ".shared_experts", dy, x, st, /*shared=*/true);
      for (size_t i = 0; i < dx.size(); ++i) dx[i] += dxs[i];
    }
    return dx;
  }

  const Config& c_;
  const ModelConfig& m_;
  F64Run& out_;
  const int64_t T_, h_, a_, d_;
  const bool swiglu_, mla_, bias_;  // bias_: model.add_bias_linear (qkv, proj, fc1, fc2)
  Stream device_, mp_, ep_;
  std::map<std::string, Vec> w_, g_;
};

}  // namespace

std::string f64_unsupported(const Config& c) {
  const auto& p = c.parallel;
  if (p.tensor_model_parallel_size != 1 || p.pipeline_model_parallel_size != 1 || p.expert_model_parallel_size != 1 ||
      p.expert_tensor_parallel_size != 1 || p.sequence_parallel)
    return "the f64 oracle models one rank only (TP = PP = EP = ETP = 1, no sequence parallelism)";
  if (c.model.gated_delta_net && c.model.multi_latent_attention) return "the f64 oracle has no MLA with GDN layers";
  if (c.model.fp8) return "the f64 oracle has no FP8 quantisation (its recompute semantics are the fp8 cases' bitwise check)";
  if (c.model.activation != "gelu" && c.model.activation != "swiglu")
    return "the f64 oracle knows GeLU and SwiGLU only, not '" + c.model.activation + "'";
  return "";
}

F64Run run_f64(const Config& c, const RankCoords& coords, const std::optional<Perturbation>& perturb) {
  const std::string why = f64_unsupported(c);
  if (!why.empty()) throw std::invalid_argument(why);
  F64Run out;
  Model model(c, coords, out);
  model.run(perturb);
  return out;
}

}  // namespace rcts::oracle
