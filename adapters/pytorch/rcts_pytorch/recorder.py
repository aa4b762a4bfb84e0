"""What the adapter observes while PyTorch runs: dropout draws, module invocations and
saved tensors, each tagged with the micro-batch and whether it happened in the forward
or inside backward (a recompute).

The phase is the adapter's own knowledge, not PyTorch's: the driver sets "forward"
before calling the model and "backward" before loss.backward(), so anything the model
code does while the phase is "backward" was re-run by a checkpoint.
"""
import contextlib

import torch


class Recorder:
    def __init__(self, param_storages):
        self.phase = "forward"
        self.step = self.micro_batch = 0
        self.path = []                     # module path stack, e.g. ["layers.0", "attention.core"]
        self.masks = []                    # dicts: site, kind, draw, step, micro_batch, p, mask
        self.counts = {}                   # module path -> [original, recompute]
        self.saves = []                    # this micro-batch's saved tensors (dicts)
        self.checkpoint_inputs = {}        # storage pointer of a running checkpoint's input -> owner module
        self.param_storages = param_storages
        self.offloaded = self.reloaded = 0  # bytes moved by save_on_cpu this micro-batch
        self.host_resident = 0              # bytes save_on_cpu holds on the host right now

    @property
    def recompute(self):
        return self.phase == "backward"

    def module_path(self):
        return ".".join(self.path)

    @contextlib.contextmanager
    def module(self, name):
        self.path.append(name)
        c = self.counts.setdefault(self.module_path(), [0, 0])
        c[1 if self.recompute else 0] += 1
        try:
            yield
        finally:
            self.path.pop()

    def under_current_path(self, fn):
        """fn, run under today's module path whenever it runs: a checkpoint re-runs it
        inside backward, when the forward's path stack has long unwound."""
        path = list(self.path)

        def wrapped(*args):
            saved, self.path = self.path, list(path)
            try:
                return fn(*args)
            finally:
                self.path = saved

        return wrapped

    def dropout(self, x, p, site, kind):
        """PyTorch's own dropout kernel (aten::native_dropout, the op F.dropout lowers to
        under autograd), which returns its mask; the mask is logged, not derived."""
        if p <= 0.0:
            return x
        out, keep = torch.native_dropout(x, p, True)
        self.masks.append({"site": site, "kind": kind, "draw": "recompute" if self.recompute else "forward",
                           "step": self.step, "micro_batch": self.micro_batch, "p": p,
                           "mask": keep.detach().to(torch.uint8).clone()})
        return out

    def pack(self, t):
        """The saved-tensor hook's view of one save during the forward: parameters are
        not activations and are not counted (Megatron-LM's and rcts's accounting)."""
        if self.phase != "forward":
            return
        ptr = t.storage().data_ptr()
        if ptr in self.param_storages:
            return
        owner = self.checkpoint_inputs.get(ptr)
        self.saves.append({"module": owner or self.module_path(), "tensor": f"saved.{len(self.saves)}",
                           "bytes": t.numel() * t.element_size(),
                           "category": "checkpoint_input" if owner is not None else "saved_activation",
                           "storage": ptr, "offset": t.storage_offset(), "recompute": False})


class RecordingHooks(torch.autograd.graph.saved_tensors_hooks):
    """Saved-tensor hooks that only observe: the tensor itself is what is saved."""

    def __init__(self, rec):
        def pack(t):
            rec.pack(t)
            return t

        super().__init__(pack, lambda t: t)


def offload_hooks(rec, pin_memory=False):
    """PyTorch's torch.autograd.graph.save_on_cpu with its own pack/unpack wrapped so the
    bytes it moves are counted (the tensors and the copy are save_on_cpu's)."""
    s = torch.autograd.graph.save_on_cpu(pin_memory=pin_memory)
    inner_pack, inner_unpack = s.pack_hook, s.unpack_hook

    def pack(t):
        packed = inner_pack(t)
        if rec.phase == "forward" and t.storage().data_ptr() not in rec.param_storages:
            n = t.numel() * t.element_size()
            rec.offloaded += n
            rec.host_resident += n
            return ("moved", n, packed)
        return ("kept", 0, packed)

    def unpack(p):
        kind, n, packed = p
        if kind == "moved":
            rec.reloaded += n
            rec.host_resident -= n
        return inner_unpack(packed)

    s.pack_hook, s.unpack_hook = pack, unpack
    return s
