"""How an rcts recompute/offload config is expressed with PyTorch's own mechanisms:

  full recompute (uniform N, block N)      torch.utils.checkpoint.checkpoint over a chunk of layers
  selective core_attn / mlp / layernorm    torch.utils.checkpoint.checkpoint over that module
  fine-grained offload of a module         torch.autograd.graph.save_on_cpu around that module
  layer-level cpu_offloading (first N)     torch.autograd.graph.save_on_cpu around each of those layers

`style` is "reentrant" or "non_reentrant" (checkpoint's use_reentrant). PyTorch has no
output-discarding checkpoint: selective `layernorm` is an ordinary checkpoint of the
layernorm (same values, other memory). What cannot be expressed is refused by
unsupported() with the reason, so the case is reported as skipped.
"""
import torch
import torch.utils.checkpoint as tc

from . import faults
from .recorder import offload_hooks

SELECTIVE = {"core_attn", "mlp", "layernorm"}
OFFLOADABLE = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"}


def unsupported(cfg, world_sizes):
    """Why the adapter cannot run `cfg` (a resolved rcts config); None when it can."""
    m, p, r, o = cfg["model"], cfg["parallel"], cfg["recompute"], cfg["offload"]
    if 1 not in world_sizes:
        return f"the case runs at world sizes {world_sizes}; the adapter runs one process"
    for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
              "expert_tensor_parallel_size"):
        if p.get(k, 1) != 1:
            return f"parallel.{k} = {p[k]}: the adapter has no tensor/pipeline/expert parallelism"
    if p.get("sequence_parallel"):
        return "sequence parallelism needs TP > 1, which the adapter does not model"
    if m.get("num_moe_experts", 0) > 0:
        return "MoE layers are not modelled by the adapter (dense layers only)"
    if m.get("multi_latent_attention") or m.get("gated_delta_net"):
        return "MLA and GDN layers are not modelled by the adapter"
    if m.get("activation") not in ("gelu", "swiglu"):
        return f"activation '{m.get('activation')}' is not modelled (GeLU, SwiGLU only)"
    if r.get("recompute_granularity") == "selective":
        extra = sorted(set(r.get("recompute_modules", [])) - SELECTIVE)
        if extra:
            return f"selective recompute of {extra} has no counterpart in the adapter (only {sorted(SELECTIVE)})"
    if r.get("distribute_saved_activations"):
        return "distribute_saved_activations is Megatron-LM's (TP-sharded checkpoint inputs)"
    if o.get("fine_grained_activation_offloading"):
        extra = sorted(set(o.get("offload_modules", [])) - OFFLOADABLE)
        if extra:
            return f"offload of {extra} (MoE modules) is not modelled"
    return None


class Mechanism:
    def __init__(self, cfg, style, rec):
        assert style in ("reentrant", "non_reentrant")
        self.rec, self.reentrant = rec, style == "reentrant"
        r, o = cfg["recompute"], cfg["offload"]
        # Eval is not special-cased: what PyTorch's checkpoint does under no_grad is its own.
        self.granularity = r.get("recompute_granularity")
        self.method, self.n = r.get("recompute_method"), r.get("recompute_num_layers")
        self.selective = set(r.get("recompute_modules", [])) if self.granularity == "selective" else set()
        fine = o.get("fine_grained_activation_offloading")
        self.offload = set(o.get("offload_modules", [])) if fine else set()
        self.layer_offload = o.get("cpu_offloading_num_layers", 0) if o.get("cpu_offloading") else -1

    def checkpoint(self, fn, x, owner):
        """checkpoint(fn, x); its stored input is attributed to module `owner`. The
        reentrant form saves the input with save_for_backward (the saved-tensor hooks see
        it); the non-reentrant form keeps it in its closure, out of the hooks' sight, so
        the adapter records it itself, as what that checkpoint holds."""
        ptr = x.storage().data_ptr()
        self.rec.checkpoint_inputs[ptr] = owner
        fn = self.rec.under_current_path(fn)
        try:
            if not self.reentrant and torch.is_grad_enabled() and self.rec.phase == "forward":
                self.rec.saves.append({"module": owner, "tensor": "checkpoint_input (non-reentrant closure)",
                                       "bytes": x.numel() * x.element_size(), "category": "checkpoint_input",
                                       "storage": ptr, "offset": x.storage_offset(), "recompute": False})
            return tc.checkpoint(fn, x, use_reentrant=self.reentrant,
                                 preserve_rng_state=not faults.active("no_preserve_rng"))
        finally:
            self.rec.checkpoint_inputs.pop(ptr, None)

    def region(self, selective_name, fn, x, offload=None):
        """One module of a layer: checkpointed when selective recompute names it, under
        save_on_cpu when fine-grained offload names it (both may apply)."""
        run = (lambda t: self.checkpoint(fn, t, self.rec.module_path())) if selective_name in self.selective else fn
        if offload in self.offload:
            with offload_hooks(self.rec):
                return run(x)
        return run(x)

    def chunks(self, n_layers):
        """Full recompute: (begin, end, checkpointed) segments, rcts's plan (design §6)."""
        if self.granularity != "full":
            return [(0, n_layers, False)]
        if self.method == "uniform":
            return [(b, min(b + self.n, n_layers), True) for b in range(0, n_layers, self.n)]
        return [(i, i + 1, True) for i in range(self.n)] + ([(self.n, n_layers, False)] if self.n < n_layers else [])

    def block(self, layers, x):
        for begin, end, ckpt in self.chunks(len(layers)):
            def seg(t, begin=begin, end=end):
                for l in layers[begin:end]:
                    t = self.layer(l, t)
                return t

            x = self.checkpoint(seg, x, f"layers.{begin}") if ckpt else seg(x)
        return x

    def layer(self, l, x):
        if l.i < self.layer_offload:
            with offload_hooks(self.rec):
                return l.forward(x)
        return l.forward(x)
