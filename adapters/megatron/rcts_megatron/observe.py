"""What the adapter observes while megatron-core runs, without changing what it runs:

* module invocations: forward pre-/post-hooks on the block's modules, under rcts's
  module names (layers.i, .attention, .attention.core, .input_layernorm, .mlp,
  .pre_mlp_layernorm; an MoE layer's mlp is .moe, counted at its router, its shared
  experts .moe.shared_experts), each counted as original or recompute;
* dropout draws: a TorchDispatchMode that sees every aten.bernoulli_ (CPU dropout,
  aten::dropout's decomposition, draws its keep mask with it) and logs the mask, the
  site (the module it ran in) and the tracker stream that was forked at the time;
* saved tensors: the kit's saved-tensor hooks during the forward (each save's op named by
  its SaveNamer, with dtype and shape); their bytes are counted at the end of the forward
  from the tensors as they are then (the kit's at_end_of_forward): a save nothing holds
  any more counts 0, and so does one whose storage CheckpointWithoutOutput freed after
  its consumer saved it.

The phase is the driver's: "backward" while loss.backward() runs, so any forward or draw
then is a recompute.
"""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from rcts_adapter_kit.saved import RecordingHooks, at_end_of_forward, bytes_per_layer, held_bytes, note_save

# Megatron module path inside a TransformerLayer -> rcts's name.
SUBMODULES = {"self_attention": "attention", "self_attention.core_attention": "attention.core",
              "input_layernorm": "input_layernorm", "pre_mlp_layernorm": "pre_mlp_layernorm", "mlp": "mlp"}
# The same for a layer whose mlp is megatron-core's MoELayer.
MOE_SUBMODULES = {**{k: v for k, v in SUBMODULES.items() if k != "mlp"}, "mlp": "moe",
                  "mlp.shared_experts": "moe.shared_experts"}


class Recorder:
    def __init__(self, cfg, param_storages):
        self.cfg = cfg
        self.phase = "forward"
        self.shadow = False        # true while driver.shadow_forward records saves
        self.step = self.micro_batch = 0
        self.path = []            # rcts module names, innermost last
        self.last_child = {}      # layer name -> rcts name of its last finished branch (attention / mlp)
        self.masks, self.counts, self.saves = [], {}, []
        self.param_storages = param_storages
        self.pending_chunk = None  # first layer run under no_grad since the last checkpoint save
        self.tracker = None        # Megatron's CudaRNGStatesTracker (for the stream name)
        self.checkpoint_inputs = {}  # the kit's map for checkpoints it is told of; Megatron's are found by path
        self.save_namer = None       # the kit's SaveNamer while the recording hooks are on

    def module_path(self):
        return self.path[-1] if self.path else ""

    @property
    def recompute(self):
        return self.phase == "backward"

    def attach(self, block, layer_names):
        """Hooks on the block's layers; layer_names[k] is rcts's name of block.layers[k]."""
        for k, layer in enumerate(block.layers):
            lname = layer_names[k]
            self._hook(layer, lname, lname, is_layer=True)
            moe = hasattr(layer.mlp, "router")
            for mpath, rname in (MOE_SUBMODULES if moe else SUBMODULES).items():
                mod = getattr(layer.mlp, "shared_experts", None) if mpath == "mlp.shared_experts" \
                    else layer.get_submodule(mpath)
                if mod is not None:
                    self._hook(mod, f"{lname}.{rname}", lname, branch=rname if "." not in rname else None,
                               count=not (moe and rname == "moe"))
            if moe:  # MoELayer's selective recompute re-runs its inner custom_forward (moe_layer.py:444), which
                # a hook on MoELayer never sees: each MoE forward, original or recomputed, routes once
                self._hook(layer.mlp.router, f"{lname}.moe", lname, path=False)

    def _hook(self, mod, name, layer_name, is_layer=False, branch=None, count=True, path=True):
        def pre(m, args, kwargs=None):
            if count and not self.shadow:  # the shadow forward (driver.shadow_forward) is the adapter's, not a call
                c = self.counts.setdefault(name, [0, 0])
                c[1 if self.recompute else 0] += 1
            if is_layer and not torch.is_grad_enabled() and self.pending_chunk is None and not self.recompute:
                self.pending_chunk = name
            if path:
                self.path.append(name)

        def post(m, args, out):
            if path and self.path and self.path[-1] == name:
                self.path.pop()
            if branch in ("attention", "mlp", "moe"):
                self.last_child[layer_name] = branch

        mod.register_forward_pre_hook(lambda m, a, k: pre(m, a, k), with_kwargs=True)
        mod.register_forward_hook(post, always_call=True)

    def site(self):
        """(site, kind) of a draw now: inside core attention the attention dropout, else
        the hidden dropout after the layer's last finished branch (attention, mlp or moe)."""
        cur = self.path[-1] if self.path else ""
        if cur.endswith(".attention.core"):
            return cur[: -len(".core")] + ".dropout", "attention"
        layer = next((p for p in reversed(self.path) if p.count(".") == 1), None)
        if layer is None:
            return "unattributed", "hidden"
        return f"{layer}.{self.last_child.get(layer, 'attention')}.hidden_dropout", "hidden"

    def on_draw(self, noise):
        site, kind = self.site()
        p = self.cfg["model"]["attention_dropout" if kind == "attention" else "hidden_dropout"]
        stream = getattr(self.tracker, "_current_state_name", "default-rng") if self.tracker else "default-rng"
        self.masks.append({"site": site, "kind": kind, "draw": "recompute" if self.recompute else "forward",
                           "step": self.step, "micro_batch": self.micro_batch, "p": p,
                           "stream": "device-default" if stream == "default-rng" else stream,
                           "mask": (noise != 0).to(torch.uint8).reshape(-1, noise.shape[-1])
                           if kind == "hidden" else (noise != 0).to(torch.uint8).clone()})

    def note(self, rec, t):
        """One save (the kit's note_save), attributed by Megatron's rule: outside every
        layer it is a checkpoint saving its inputs after running its first layer (full
        recompute's tensor_parallel.checkpoint), owned by that layer."""
        ptr = t.untyped_storage().data_ptr()
        if self.phase != "forward" or ptr == 0 or ptr in self.param_storages:  # before a pending chunk is taken
            return
        owner = op = None
        if not any(p.count(".") == 1 for p in self.path):
            owner, op = self.pending_chunk or "", CHECKPOINT_OP
            self.pending_chunk = None
        note_save(self, t, owner=owner, op=op, watch=True)

    def finish_forward(self, n_layers):
        """Saved tensors of this micro-batch as held now, their bytes per layer and in all."""
        saves, self.saves = at_end_of_forward(self.saves), []
        return saves, bytes_per_layer(saves, n_layers), held_bytes(saves)


# The op of a checkpoint's own input under Megatron's full recompute.
CHECKPOINT_OP = "megatron.core.tensor_parallel.checkpoint"


class DropoutTap(TorchDispatchMode):
    """Sees every op; logs the keep mask of each aten.bernoulli_ (a dropout draw)."""

    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten.bernoulli_.float:
            self.rec.on_draw(args[0])
        return out


def save_hooks(rec):
    """The kit's recording hooks with Megatron's attribution (Recorder.note)."""
    return RecordingHooks(rec, note=rec.note)
