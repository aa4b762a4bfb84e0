"""How an rcts recompute/offload config is expressed with PyTorch's own mechanisms:

  full recompute (uniform N, block N)      torch.utils.checkpoint.checkpoint over a chunk of layers
  selective core_attn / mlp / layernorm    torch.utils.checkpoint.checkpoint over that module
  fine-grained offload of a module         torch.autograd.graph.save_on_cpu around that module
  layer-level cpu_offloading (first N)     torch.autograd.graph.save_on_cpu around each of those layers

`style` is "reentrant" or "non_reentrant" (checkpoint's use_reentrant), or "sac":
selective recompute as selective activation checkpointing, one non-reentrant checkpoint
per layer whose create_selective_checkpoint_contexts policy recomputes the ops of the
named modules and saves every other op's output (full recompute and offload as
non_reentrant). PyTorch has no
output-discarding checkpoint: selective `layernorm` is an ordinary checkpoint of the
layernorm (same values, other memory). What cannot be expressed is refused by
unsupported() with the reason, so the case is reported as skipped.
"""
import torch
import torch.utils.checkpoint as tc
from torch.utils._python_dispatch import TorchDispatchMode

from rcts_adapter_kit.config import DENSE_ONE_PROCESS, READ, inert_unless, only, refusal, subset_of
from rcts_adapter_kit.recorder import storage_ptr
from rcts_adapter_kit.saved import note_save, offload_hooks

from . import faults

SELECTIVE = {"core_attn", "mlp", "layernorm"}
STYLES = ("reentrant", "non_reentrant", "sac")
# SAC: the module paths (recorder.module names) whose ops a selective module name covers.
SAC_MODULES = {"core_attn": ("attention.core",), "mlp": ("mlp",), "layernorm": ("input_layernorm", "pre_mlp_layernorm")}
OFFLOADABLE = {"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm"}

# The case-file keys the adapter models: not seed_ranks (a run seeded as another rank's
# coordinates: the adapter has one generator seeded with run.seed, no design §5 seeds).
CASE_KEYS = ("id", "description", "ranks", "backends", "config", "variants", "expect", "xfail")
# Every key of rcts's resolved config the adapter models, and for which values: the kit's
# dense one-process block, plus the activations, dtypes, recompute and offload mechanisms
# it expresses; any other key or value skips the case with the reason.
SPEC = {
    **DENSE_ONE_PROCESS,
    "model.add_bias_linear": READ,  # model.py: the four linears with or without their biases
    "model.activation": only("gelu", "swiglu", why="only GeLU (tanh) and SwiGLU are modelled"),
    "model.activation_dtype": only("f32", "bf16", "f64"),
    "recompute.recompute_granularity": only(None, "full", "selective"),
    "recompute.recompute_method": READ,
    "recompute.recompute_num_layers": READ,
    "recompute.recompute_modules": inert_unless("recompute.recompute_granularity", "selective",
                                                subset_of(SELECTIVE, why="no counterpart in the adapter")),
    "offload.cpu_offloading": READ,
    "offload.cpu_offloading_num_layers": READ,
    "offload.fine_grained_activation_offloading": READ,
    "offload.offload_modules": inert_unless("offload.fine_grained_activation_offloading", True,
                                            subset_of(OFFLOADABLE, why="MoE modules are not modelled")),
    **{f"offload.{k}": only(0.0 if k.startswith("link") else 0,
                            why="a transfer timing model; save_on_cpu copies synchronously and has none")
       for k in ("link_bandwidth_gbps", "link_latency_us", "max_inflight_offloads")},
}

def unsupported(cfg, world_sizes):
    """Why the adapter cannot run `cfg` (a resolved rcts config); None when it can."""
    if 1 not in world_sizes:
        return f"the case runs at world sizes {world_sizes}; the adapter runs one process"
    return refusal(cfg, SPEC)


class Mechanism:
    def __init__(self, cfg, style, rec):
        assert style in STYLES, style
        self.rec, self.reentrant = rec, style == "reentrant"
        self.sac = style == "sac"
        rec.count_recompute_by_ops = self.sac
        r, o = cfg["recompute"], cfg["offload"]
        # Eval is not special-cased: what PyTorch's checkpoint does under no_grad is its own.
        self.granularity = r.get("recompute_granularity")
        self.method, self.n = r.get("recompute_method"), r.get("recompute_num_layers")
        self.selective = set(r.get("recompute_modules", [])) if self.granularity == "selective" else set()
        fine = o.get("fine_grained_activation_offloading")
        self.offload = set(o.get("offload_modules", [])) if fine else set()
        self.layer_offload = o.get("cpu_offloading_num_layers", 0) if o.get("cpu_offloading") else -1
        self.min_elements = o.get("min_offloaded_tensor_size", 0)

    def policy(self, ctx, op, *args, **kwargs):
        """SAC: recompute the ops of the modules selective recompute names, save the rest."""
        path = f".{self.rec.module_path()}."
        if any(f".{m}." in path for name in self.selective for m in SAC_MODULES[name]):
            return tc.CheckpointPolicy.PREFER_RECOMPUTE
        return tc.CheckpointPolicy.MUST_SAVE

    def checkpoint(self, fn, x, owner, sac=False):
        """checkpoint(fn, x); its stored input is attributed to module `owner`. The
        reentrant form saves the input with save_for_backward (the saved-tensor hooks see
        it); the non-reentrant form keeps it in its closure, out of the hooks' sight, so
        the adapter records it itself, as what that checkpoint holds."""
        ptr = storage_ptr(x)
        self.rec.checkpoint_inputs[ptr] = owner
        if faults.active("recompute_keeps_outputs"):
            fn = _keeping(fn, self.rec)
        fn = self.rec.under_current_path(fn)
        try:
            if not self.reentrant and torch.is_grad_enabled():
                note_save(self.rec, x, "checkpoint_input", "checkpoint_input (non-reentrant closure)", owner)
            extra = {}
            if sac:
                extra = {"context_fn": lambda: tc.create_selective_checkpoint_contexts(self.policy),
                         "respect_saved_tensors_hooks": True}  # SAC's cache goes through the hooks: counted
            return tc.checkpoint(fn, x, use_reentrant=self.reentrant,
                                 preserve_rng_state=not faults.active("no_preserve_rng"), **extra)
        finally:
            self.rec.checkpoint_inputs.pop(ptr, None)

    def region(self, selective_name, fn, x, offload=None):
        """One module of a layer: checkpointed when selective recompute names it (SAC: the
        layer's policy recomputes it instead), under save_on_cpu when fine-grained offload
        names it (both may apply)."""
        own = selective_name in self.selective and not self.sac
        run = (lambda t: self.checkpoint(fn, t, self.rec.module_path())) if own else fn
        if offload in self.offload:
            with self.offload_hooks():
                return run(x)
        return run(x)

    def offload_hooks(self):
        """save_on_cpu (counted). pin_memory=True: its copying branch (pinned only where
        CUDA is available), so the host copy is a tensor of its own; with pin_memory=False
        on a CPU tensor, tensor.cpu() is the tensor itself and nothing would be moved."""
        return offload_hooks(self.rec, self.min_elements, pin_memory=True, stale=faults.active("stale_offload_buffer"),
                             keep_device_copy=faults.active("offload_keeps_device_copy"))

    def chunks(self, n_layers):
        """Full recompute: (begin, end, checkpointed) segments, rcts's plan (design §6)."""
        if self.granularity != "full":
            return [(0, n_layers, False)]
        if self.method == "uniform":
            return [(b, min(b + self.n, n_layers), True) for b in range(0, n_layers, self.n)]
        return [(i, i + 1, True) for i in range(self.n)] + ([(self.n, n_layers, False)] if self.n < n_layers else [])

    def block(self, layers, x):
        x0 = x
        for begin, end, ckpt in self.chunks(len(layers)):
            def seg(t, begin=begin, end=end):
                if begin > 0 and self.rec.recompute and faults.active("wrong_chunk_input"):
                    t = t + (x0.detach() - t.detach())  # the block's input's values, t's gradient path
                for l in layers[begin:end]:
                    t = self.layer(l, t)
                return t

            x = self.checkpoint(seg, x, f"layers.{begin}") if ckpt else seg(x)
        return x

    def layer(self, l, x):
        if self.sac and self.selective:  # one checkpoint per layer, its policy picks the modules
            return self.checkpoint(l.forward, x, f"layers.{l.i}", sac=True)
        if l.i < self.layer_offload:
            with self.offload_hooks():
                return l.forward(x)
        return l.forward(x)


_KEPT = []  # the recompute_keeps_outputs fault's list


class _Keep(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        _KEPT.append(out)
        return out


def _keeping(fn, rec):
    """fn, every tensor of whose recompute is kept for good (a fault)."""
    def wrapped(*args):
        if not rec.recompute:
            return fn(*args)
        with _Keep():
            return fn(*args)

    return wrapped
