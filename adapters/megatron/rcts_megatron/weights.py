"""rcts's parameters <-> megatron-core's modules, in Megatron's own layouts.

rcts names `layers.i.attention.qkv.weight` etc. (docs/dump-format.md, "Parameter
names"); inside a TransformerBlock the same parameter is `layers.k.self_attention.
linear_qkv.weight` (k the stage-local index; with `decoder.` in front in a GPTModel).
Layouts: rcts's QKV rows are [q | k | v], each h/tp wide and head-major; Megatron's
linear_qkv interleaves per head, [head][q, k, v][d]: rcts row part*hp + head*d + j is
Megatron row head*3d + part*d + j (hp = h/tp, d = h/heads). Every other tensor has the
same layout in both (linear weights (out, in); SwiGLU fc1 [gate | up]; TP and ETP shards
as Megatron shards them). An MoE layer is Megatron's `mlp`: `layers.i.moe.router.weight`
is `layers.i.mlp.router.weight`, routed expert e (rcts's global index) is local expert
e - expert_offset of this EP rank (`mlp.experts.local_experts.<j>.linear_fc{1,2}`), shared
experts are `mlp.shared_experts.linear_fc{1,2}` (docs/dump-format.md, "Parameter names").
"""
import torch
from rcts_adapter_kit import names

from . import faults

_RENAME = (("attention.qkv.", "self_attention.linear_qkv."), ("attention.proj.", "self_attention.linear_proj."),
           ("mlp.fc1.", "mlp.linear_fc1."), ("mlp.fc2.", "mlp.linear_fc2."),
           ("moe.router.", "mlp.router."), ("moe.shared_experts.fc1.", "mlp.shared_experts.linear_fc1."),
           ("moe.shared_experts.fc2.", "mlp.shared_experts.linear_fc2."))


def megatron_name(rcts_name, layer_offset=0, expert_offset=0):
    """Name inside the TransformerBlock (stage-local layer index, EP-local expert index)."""
    parts = rcts_name.split(".")
    assert parts[0] == "layers", rcts_name
    if parts[2:4] == ["moe", "experts"]:  # layers.i.moe.experts.e.fc1.weight
        e = int(parts[4]) - expert_offset
        return f"layers.{int(parts[1]) - layer_offset}.mlp.experts.local_experts.{e}.linear_{'.'.join(parts[5:])}"
    rest = ".".join(parts[2:]) + "."
    for a, b in _RENAME:
        if rest.startswith(a):
            rest = b + rest[len(a):]
    return f"layers.{int(parts[1]) - layer_offset}.{rest[:-1]}"


def qkv_perm(rows, heads_per_rank):
    """Index vector: megatron_rows = rcts_rows[perm] (the kit's permutation over this
    rank's rows: rows = 3 * hp)."""
    return torch.tensor(names.qkv_rows_to_megatron(rows // 3, heads_per_rank), dtype=torch.long)


class ParamMap:
    def __init__(self, block, rcts_names, heads_per_rank, layer_offset=0, expert_offset=0):
        self.mods = dict(block.named_parameters())
        self.names = list(rcts_names)
        self.heads = heads_per_rank
        self.offset = layer_offset
        self.expert_offset = expert_offset
        for n in self.names:
            if self.megatron(n) not in self.mods:
                raise KeyError(f"rcts parameter {n}: no {self.megatron(n)} in the Megatron block "
                               f"(it has {sorted(self.mods)[:6]}...)")
        missing = sorted(set(self.mods) - {self.megatron(n) for n in self.names})
        if missing:  # a Megatron parameter rcts does not have would train from whatever it was built with
            raise KeyError(f"Megatron block parameters without an rcts counterpart: {missing[:6]}")

    def megatron(self, name):
        return megatron_name(name, self.offset, self.expert_offset)

    def _perm(self, name, t):
        if ".attention.qkv." in name and not faults.active("qkv_layout"):
            return qkv_perm(t.shape[0], self.heads)
        return None

    def load(self, values):
        """values: {rcts name: f32 tensor} -> the module's parameters (in their dtype)."""
        with torch.no_grad():
            for n in self.names:
                p = self.mods[self.megatron(n)]
                t = values[n]
                perm = self._perm(n, t)
                src = t[perm] if perm is not None else t
                if tuple(src.shape) != tuple(p.shape):
                    raise ValueError(f"rcts parameter {n} has shape {tuple(src.shape)}, Megatron's "
                                     f"{self.megatron(n)} {tuple(p.shape)}")
                p.copy_(src.to(p.dtype))

    def to_rcts(self, name, t):
        """A Megatron-layout tensor of parameter `name` in rcts's layout, f32."""
        perm = self._perm(name, t)
        if perm is None:
            return t.detach().float().clone()
        out = torch.empty_like(t, dtype=torch.float32)
        out[perm] = t.detach().float()
        return out

    def param(self, name):
        return self.mods[self.megatron(name)]
