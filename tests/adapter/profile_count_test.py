"""The torch-cpu saved-tensor profile against an independent count: a pre-LN block
written here in plain PyTorch (none of the adapter's or the kit's code), the program the
profile describes (every op in f32 on x.float(), outputs rounded to the activation dtype,
torch.utils.checkpoint for recompute), its saved tensors counted with PyTorch's own
torch.autograd.graph.saved_tensors_hooks, per layer as (dtype, shape) with a tensor two
ops keep counted once; compared with `rcts memory --profile torch-cpu --json`.

RCTS_BIN names the rcts binary (CTest sets it)."""
import json
import math
import os
import subprocess
import tempfile
import unittest

import torch
import torch.nn.functional as F
import torch.utils.checkpoint as tc

DT = {torch.float32: "f32", torch.bfloat16: "bf16", torch.bool: "bool"}
S, B, H, A, FFN = 8, 2, 16, 2, 64


def model_inventory(cfg):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
    try:
        r = subprocess.run([os.environ["RCTS_BIN"], "memory", "--config", f.name, "--profile", "torch-cpu", "--json"],
                           capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return [sorted((t["dtype"], tuple(t["shape"])) for t in l["tensors"]) for l in json.loads(r.stdout)["layers"]]


class Counter:
    """Saved-tensor hooks counting what autograd keeps, per layer (self.layer)."""

    def __init__(self, params):
        self.layer, self.seen = 0, {}
        self.params = {p.untyped_storage().data_ptr() for p in params}

    def pack(self, t):
        ptr = t.untyped_storage().data_ptr()
        if ptr not in self.params:
            key = (ptr, t.storage_offset(), t.numel() * t.element_size())
            self.seen.setdefault(self.layer, {}).setdefault(key, (DT[t.dtype], tuple(t.shape)))  # the first save of a tensor
        return t

    def per_layer(self, n):
        return [sorted(self.seen.get(i, {}).values()) for i in range(n)]


def block(cfg, counter, x, params):
    m = cfg["model"]
    act = {"f32": torch.float32, "bf16": torch.bfloat16}[m["activation_dtype"]]
    rc = cfg.get("recompute", {})
    sel = set(rc.get("recompute_modules", [])) if rc.get("recompute_granularity") == "selective" else set()
    p_attn, p_hid = m["attention_dropout"], m["hidden_dropout"]

    def ckpt(name, fn, t):
        return tc.checkpoint(fn, t, use_reentrant=True) if name in sel else fn(t)

    def layer(i, x):
        w = params[i]
        rnd = lambda t: t.to(act)  # noqa: E731
        lin = lambda t, n: rnd(F.linear(t.float(), w[n + ".w"], w[n + ".b"]))  # noqa: E731
        ln = lambda t, n: rnd(F.layer_norm(t.float(), (H,), w[n + ".w"], w[n + ".b"], 1e-5))  # noqa: E731

        def core(qkv):
            d = H // A
            q, k, v = (qkv[:, j * H:(j + 1) * H].float().reshape(S, B, A, d).permute(1, 2, 0, 3) for j in range(3))
            sc = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
            pr = rnd(torch.softmax(sc.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), float("-inf")), -1))
            if p_attn > 0:
                pr = torch.native_dropout(pr, p_attn, True)[0]
            return rnd(torch.matmul(pr.float(), v).permute(2, 0, 1, 3).reshape(S * B, H))

        def mlp(t):
            a = lin(t, "fc1").float()
            if m["activation"] == "swiglu":
                f = a.shape[1] // 2
                g = rnd(F.silu(a[:, :f]) * a[:, f:])
            else:
                g = rnd(F.gelu(a, approximate="tanh"))
            return lin(g, "fc2")

        def drop(t):
            return torch.native_dropout(t, p_hid, True)[0] if p_hid > 0 else t

        counter.layer = i
        a = lin(ckpt("core_attn", core, lin(ckpt("layernorm", lambda t: ln(t, "ln1"), x), "qkv")), "proj")
        h1 = rnd(x.float() + drop(a).float())
        return rnd(h1.float() + drop(ckpt("mlp", mlp, ckpt("layernorm", lambda t: ln(t, "ln2"), h1))).float())

    n = m["num_layers"]
    if rc.get("recompute_granularity") == "full":  # uniform chunks of recompute_num_layers
        k = rc["recompute_num_layers"]
        for b in range(0, n, k):
            def seg(t, b=b):
                for i in range(b, min(b + k, n)):
                    t = layer(i, t)
                counter.layer = b  # the reentrant checkpoint saves its input after the forward
                return t
            counter.layer = b
            x = tc.checkpoint(seg, x, use_reentrant=True)
        return x
    for i in range(n):
        x = layer(i, x)
    return x


def count(cfg):
    m = cfg["model"]
    act = {"f32": torch.float32, "bf16": torch.bfloat16}[m["activation_dtype"]]
    f1 = 2 * FFN if m["activation"] == "swiglu" else FFN
    shapes = {"ln1": [H], "ln2": [H], "qkv": [3 * H, H], "proj": [H, H], "fc1": [f1, H], "fc2": [H, FFN]}
    params = []
    for _ in range(m["num_layers"]):
        p = {}
        for n, s in shapes.items():
            p[n + ".w"] = torch.randn(s).requires_grad_()
            p[n + ".b"] = torch.randn(s[0]).requires_grad_()
        params.append(p)
    counter = Counter([t for p in params for t in p.values()])
    x = torch.randn(S * B, H).to(act).requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(counter.pack, lambda t: t):
        block(cfg, counter, x, params)
    return counter.per_layer(m["num_layers"])


def config(act="bf16", dropout=0.1, activation="gelu", **recompute):
    return {"model": {"num_layers": 2, "hidden_size": H, "num_attention_heads": A, "seq_length": S,
                      "micro_batch_size": B, "ffn_hidden_size": FFN, "activation": activation,
                      "attention_dropout": dropout, "hidden_dropout": dropout, "activation_dtype": act},
            "recompute": recompute}


class ProfileCount(unittest.TestCase):
    def check(self, cfg):
        got, want = count(cfg), model_inventory(cfg)
        self.assertEqual(got, want, json.dumps(cfg))

    def test_no_recompute(self):
        for act in ("bf16", "f32"):
            for dropout in (0.0, 0.1):
                for activation in ("gelu", "swiglu"):
                    with self.subTest(act=act, dropout=dropout, activation=activation):
                        self.check(config(act, dropout, activation))

    def test_selective(self):
        for mods in (["core_attn"], ["mlp"], ["layernorm"], ["core_attn", "mlp", "layernorm"]):
            for act in ("bf16", "f32"):
                with self.subTest(mods=mods, act=act):
                    self.check(config(act, recompute_granularity="selective", recompute_modules=mods))

    def test_full(self):
        self.check(config("bf16", recompute_granularity="full", recompute_method="uniform", recompute_num_layers=2))

    def test_count_sees_a_leak(self):
        """The comparison is not vacuous: one more saved tensor is a difference."""
        cfg = config("f32", 0.0)
        got = count(cfg)
        got[0] = sorted(got[0] + [("f32", (S * B, H))])
        self.assertNotEqual(got, model_inventory(cfg))


if __name__ == "__main__":
    unittest.main()
