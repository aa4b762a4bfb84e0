"""The rcts pre-LN GPT block written in plain PyTorch, from the documented rules (design
§4, docs/decisions.md, the layouts every dump states):

  x -> input_layernorm -> qkv linear -> core attention (q k^T / sqrt(d), causal softmax,
  attention dropout, times v) -> proj -> hidden dropout + residual -> pre_mlp_layernorm
  -> fc1 -> GeLU (tanh form) or SwiGLU ([gate | up]) -> fc2 -> hidden dropout + residual

Tokens are (s*b, h) rows with row = s_index * b + b_index; the qkv output columns are
[q | k | v], each head-major; attention masks are (b, heads, s, s), hidden masks (s*b, h).
Parameters are f32; activations are held in the config's activation dtype and every op
computes in f32 and rounds its output once (rcts's mixed-precision rule).

Dense layers only. How a layer is recomputed or offloaded is not decided here: the
mechanism object (mechanisms.py) wraps the regions it names. The block is shared: the
DeepSpeed adapter (adapters/deepspeed) runs it under its own mechanism, which may give
  mech.tp                    tensor parallelism (design §8): the parameters are this rank's
                             shards (QKV and fc1 column-parallel, proj and fc2 row-parallel);
                             tp.copy(x) enters a column-parallel layer (its backward sums the
                             input gradient over the ranks), tp.reduce(y) sums a
                             row-parallel layer's partial output before its bias is added
  mech.attention_dropout_rng()  the context attention dropout draws in (design §5: the
                             model-parallel stream); none here
"""
import contextlib
import math

import torch
import torch.nn.functional as F

from . import faults

_PRIVATE = {}  # the unrecorded_generator fault's generator


class Layer:
    def __init__(self, index, params, cfg, act_dtype, rec, mech):
        self.i, self.p, self.rec, self.mech = index, params, rec, mech
        m = cfg["model"]
        self.s, self.b, self.h = m["seq_length"], m["micro_batch_size"], m["hidden_size"]
        self.a = m["num_attention_heads"]
        self.d = self.h // self.a
        self.eps = m["layernorm_epsilon"]
        self.biased = m["add_bias_linear"]  # the four linears' biases (design §4)
        self.swiglu = m["activation"] == "swiglu"
        self.p_attn, self.p_hidden = m["attention_dropout"], m["hidden_dropout"]
        self.training = cfg["run"]["training"]
        self.act = act_dtype
        self.name = f"layers.{index}"
        self.tp = getattr(mech, "tp", None)
        # This rank's width of the attention (q, k or v) and its heads: all of them without TP.
        self.hp = params[f"{self.name}.attention.qkv.weight"].shape[0] // 3
        self.ap = self.a * self.hp // self.h

    def w(self, name):
        return self.p[f"{self.name}.{name}"]

    def round(self, t):
        return t.to(self.act)

    def layernorm(self, which, x):
        with self.rec.module(which):
            return self.round(F.layer_norm(x.float(), (self.h,), self.w(f"{which}.weight"),
                                           self.w(f"{which}.bias"), self.eps))

    def bias(self, name):
        return self.w(f"{name}.bias") if self.biased else None

    def linear(self, name, x):
        return self.round(F.linear(x.float(), self.w(f"{name}.weight"), self.bias(name)))

    def column_linear(self, name, x):
        """A column-parallel layer (QKV, fc1): under TP its input enters the TP region."""
        return self.linear(name, self.tp.copy(x) if self.tp else x)

    def row_linear(self, name, x):
        """A row-parallel layer (proj, fc2): under TP the partial products are summed over
        the ranks in f32, then the (replicated) bias is added once, then rounded."""
        if not self.tp:
            return self.linear(name, x)
        part, bias = self.tp.reduce(F.linear(x.float(), self.w(f"{name}.weight"))), self.bias(name)
        return self.round(part if bias is None else part + bias)

    def dropout(self, x, p, site, kind):
        if not self.training:
            return x
        if kind == "attention" and p > 0 and faults.active("unrecorded_generator"):
            g = _PRIVATE.setdefault("g", torch.Generator().manual_seed(7))
            keep = torch.rand(x.shape, generator=g) >= p
            self.rec.record_mask(f"{self.name}.{site}", kind, p, keep)
            return x * keep / (1 - p)
        rng = self.mech.attention_dropout_rng() if kind == "attention" and hasattr(self.mech, "attention_dropout_rng") \
            else contextlib.nullcontext()
        with rng:
            return self.rec.dropout(x, p, f"{self.name}.{site}", kind)

    def core_attention(self, qkv):
        with self.rec.module("attention.core"):
            s, b, a, d, h = self.s, self.b, self.ap, self.d, self.hp  # this rank's heads and width

            def heads(k):  # (s*b, h) slice -> (b, a, s, d)
                if faults.active("qkv_interleaved"):
                    return qkv.float().reshape(s, b, a, 3, d)[:, :, :, k].permute(1, 2, 0, 3)
                return qkv[:, k * h:(k + 1) * h].float().reshape(s, b, a, d).permute(1, 2, 0, 3)

            q, k, v = heads(0), heads(1), heads(2)
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
            causal = torch.ones(s, s, dtype=torch.bool).triu(1)
            probs = self.round(torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1))
            dropped = self.dropout(probs, self.p_attn, "attention.dropout", "attention")
            ctx = torch.matmul(dropped.float(), v)               # (b, a, s, d)
            return self.round(ctx.permute(2, 0, 1, 3).reshape(s * b, h))

    def attention_branch(self, x):
        ln = self.mech.region("layernorm", lambda t: self.layernorm("input_layernorm", t), x,
                              offload="attn_norm")
        qkv = self.mech.region(None, lambda t: self.column_linear("attention.qkv", t), ln, offload="qkv_linear")
        ctx = self.mech.region("core_attn", self.core_attention, qkv, offload="core_attn")
        out = self.mech.region(None, lambda t: self.row_linear("attention.proj", t), ctx, offload="attn_proj")
        return out

    def mlp(self, x):
        with self.rec.module("mlp"):
            a = self.column_linear("mlp.fc1", x)
            if self.swiglu:
                f = a.shape[1] // 2
                af = a.float()
                g = self.round(F.silu(af[:, :f]) * af[:, f:])
            else:
                g = self.round(F.gelu(a.float(), approximate="tanh"))
            return self.row_linear("mlp.fc2", g)

    def forward(self, x):
        with self.rec.module(self.name):
            attn = self.attention_branch(x)
            h1 = self.round(x.float() + self.dropout(attn, self.p_hidden, "attention.hidden_dropout", "hidden").float())
            ln2 = self.mech.region("layernorm", lambda t: self.layernorm("pre_mlp_layernorm", t), h1,
                                   offload="mlp_norm")
            m = self.mech.region("mlp", self.mlp, ln2, offload=None)
            y = self.round(h1.float() + self.dropout(m, self.p_hidden, "mlp.hidden_dropout", "hidden").float())
            if faults.active("leak_saved_tensor"):
                y = y * torch.ones_like(y)
            return y


class Block:
    def __init__(self, params, cfg, act_dtype, rec, mech):
        n = cfg["model"]["num_layers"]
        self.layers = [Layer(i, params, cfg, act_dtype, rec, mech) for i in range(n)]
        self.mech = mech

    def forward(self, x):
        return self.mech.block(self.layers, x)
