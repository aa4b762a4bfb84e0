"""Parameter names and the fused-QKV layout: rcts's names beside Megatron-LM's (GPT model,
local layer spec; docs/dump-format.md, "Parameter names"), and the row permutation
between rcts's QKV layout ([q | k | v], head-major inside) and Megatron-LM's (per head
interleaved [head][q, k, v][d]). The same table as harness/lib/dump_v1.cpp's
megatron_name(); the kit's unit tests pin both directions."""
import re

_PREFIXES = [
    ("input_layernorm.", "input_layernorm."),
    ("attention.qkv.", "self_attention.linear_qkv."),
    ("attention.proj.", "self_attention.linear_proj."),
    ("pre_mlp_layernorm.", "pre_mlp_layernorm."),
    ("mlp.fc1.", "mlp.linear_fc1."),
    ("mlp.fc2.", "mlp.linear_fc2."),
    ("moe.router.", "mlp.router."),
    ("moe.shared_experts.fc1.", "mlp.shared_experts.linear_fc1."),
    ("moe.shared_experts.fc2.", "mlp.shared_experts.linear_fc2."),
]
_EXPERT = re.compile(r"^moe\.experts\.(\d+)\.fc([12])\.(.+)$")
_MEG_EXPERT = re.compile(r"^mlp\.experts\.local_experts\.(\d+)\.linear_fc([12])\.(.+)$")


def megatron_name(name):
    """Megatron-LM's name of rcts parameter `name`, or None where Megatron has none."""
    m = re.match(r"^(layers\.\d+)\.(.+)$", name)
    if not m:
        return None
    layer, rest = m.groups()
    for ours, theirs in _PREFIXES:
        if rest.startswith(ours):
            return f"decoder.{layer}.{theirs}{rest[len(ours):]}"
    e = _EXPERT.match(rest)
    if e:
        return f"decoder.{layer}.mlp.experts.local_experts.{e[1]}.linear_fc{e[2]}.{e[3]}"
    return None


def rcts_name(megatron):
    """The inverse of megatron_name(); None for a name rcts does not have."""
    m = re.match(r"^decoder\.(layers\.\d+)\.(.+)$", megatron)
    if not m:
        return None
    layer, rest = m.groups()
    for ours, theirs in _PREFIXES:
        if rest.startswith(theirs):
            return f"{layer}.{ours}{rest[len(theirs):]}"
    e = _MEG_EXPERT.match(rest)
    if e:
        return f"{layer}.moe.experts.{e[1]}.fc{e[2]}.{e[3]}"
    return None


def qkv_rows_to_megatron(hidden, heads):
    """perm with megatron_rows = rcts_rows[perm] for the fused QKV weight/bias (MHA):
    Megatron row head * 3d + part * d + j is rcts row part * h + head * d + j."""
    d = hidden // heads
    return [part * hidden + head * d + j for head in range(heads) for part in range(3) for j in range(d)]


def qkv_rows_from_megatron(hidden, heads):
    """perm with rcts_rows = megatron_rows[perm] (the inverse of qkv_rows_to_megatron)."""
    fwd = qkv_rows_to_megatron(hidden, heads)
    inv = [0] * len(fwd)
    for meg_row, rcts_row in enumerate(fwd):
        inv[rcts_row] = meg_row
    return inv
