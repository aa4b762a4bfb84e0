"""What the adapter observes while megatron-core runs, without changing what it runs:

* module invocations: forward pre-/post-hooks on the block's modules, under rcts's
  module names (layers.i, .attention, .attention.core, .input_layernorm, .mlp,
  .pre_mlp_layernorm), each counted as original or recompute;
* dropout draws: a TorchDispatchMode that sees every aten.bernoulli_ (CPU dropout,
  aten::dropout's decomposition, draws its keep mask with it) and logs the mask, the
  site (the module it ran in) and the tracker stream that was forked at the time;
* saved tensors: saved-tensor hooks during the forward; their bytes are counted at the
  end of the forward from the tensors as they are then: a save nothing holds any more
  counts 0, and so does one whose storage CheckpointWithoutOutput freed after its
  consumer saved it.

The phase is the driver's: "backward" while loss.backward() runs, so any forward or draw
then is a recompute.
"""
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Megatron module path inside a TransformerLayer -> rcts's name.
SUBMODULES = {"self_attention": "attention", "self_attention.core_attention": "attention.core",
              "input_layernorm": "input_layernorm", "pre_mlp_layernorm": "pre_mlp_layernorm", "mlp": "mlp"}


class Recorder:
    def __init__(self, cfg, param_storages):
        self.cfg = cfg
        self.phase = "forward"
        self.step = self.micro_batch = 0
        self.path = []            # rcts module names, innermost last
        self.last_child = {}      # layer name -> rcts name of its last finished branch (attention / mlp)
        self.masks, self.counts, self.saves = [], {}, []
        self.param_storages = param_storages
        self.pending_chunk = None  # first layer run under no_grad since the last checkpoint save
        self.tracker = None        # Megatron's CudaRNGStatesTracker (for the stream name)

    @property
    def recompute(self):
        return self.phase == "backward"

    def attach(self, block, layer_names):
        """Hooks on the block's layers; layer_names[k] is rcts's name of block.layers[k]."""
        for k, layer in enumerate(block.layers):
            lname = layer_names[k]
            self._hook(layer, lname, lname, is_layer=True)
            for mpath, rname in SUBMODULES.items():
                mod = layer.get_submodule(mpath)
                self._hook(mod, f"{lname}.{rname}", lname, branch=rname if "." not in rname else None)

    def _hook(self, mod, name, layer_name, is_layer=False, branch=None):
        def pre(m, args, kwargs=None):
            c = self.counts.setdefault(name, [0, 0])
            c[1 if self.recompute else 0] += 1
            if is_layer and not torch.is_grad_enabled() and self.pending_chunk is None and not self.recompute:
                self.pending_chunk = name
            self.path.append(name)

        def post(m, args, out):
            if self.path and self.path[-1] == name:
                self.path.pop()
            if branch in ("attention", "mlp"):
                self.last_child[layer_name] = branch

        mod.register_forward_pre_hook(lambda m, a, k: pre(m, a, k), with_kwargs=True)
        mod.register_forward_hook(post, always_call=True)

    def site(self):
        """(site, kind) of a draw now: inside core attention the attention dropout, else
        the hidden dropout after the layer's last finished branch."""
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

    def pack(self, t):
        if self.phase != "forward":
            return
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr in self.param_storages or ptr == 0:
            return
        layer = next((p for p in reversed(self.path) if p.count(".") == 1), None)
        category = "saved_activation"
        if layer is None:  # a checkpoint saving its inputs, after running its first layer
            layer, category = self.pending_chunk or "", "checkpoint_input"
            self.pending_chunk = None
        self.saves.append({"module": self.path[-1] if self.path else layer, "layer": layer, "tensor_ref": weakref.ref(t),
                           "storage": ptr, "offset": t.storage_offset(), "category": category})

    def finish_forward(self, n_layers, names):
        """Saved tensors of this micro-batch with their bytes as held now; per-layer bytes."""
        out, seen, per_layer = [], {}, [0] * n_layers
        for k, s in enumerate(self.saves):
            t = s.pop("tensor_ref")()  # None: nothing holds it any more (a save inside a checkpoint's
            # no-grad forward that Megatron's enable_grad bias-dropout-add made, dropped with its graph)
            nbytes = 0 if t is None or t.untyped_storage().nbytes() == 0 else t.numel() * t.element_size()
            e = {"module": s["module"], "tensor": f"saved.{k}", "bytes": nbytes, "category": s["category"],
                 "storage": s["storage"], "offset": s["offset"], "recompute": False}
            out.append(e)
            key = (s["storage"], s["offset"], nbytes)
            if key in seen:
                continue
            seen[key] = True
            if s["layer"] in names:
                per_layer[names.index(s["layer"])] += nbytes
        held = sum(b for (_, _, b) in seen)
        self.saves = []
        return out, per_layer, held


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


class SaveHooks(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self, rec):
        def pack(t):
            rec.pack(t)
            return t

        super().__init__(pack, lambda t: t)
