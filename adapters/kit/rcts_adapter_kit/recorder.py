"""What an adapter observes while the framework runs: module invocations (original or
recompute), dropout draws with their masks, and the tensors saved for backward, each
tagged with the step, micro-batch and phase.

The phase is the adapter's own knowledge, not the framework's: the driver sets
"forward" before calling the model and "backward" before loss.backward(), so anything
the model code does while the phase is "backward" was re-run by a checkpoint.
"""
import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def storage_ptr(t):
    """The address of t's storage (views of one storage share it)."""
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()


class Recorder:
    def __init__(self, param_storages=()):
        self.phase = "forward"
        self.step = self.micro_batch = 0
        self.path = []                     # module path stack, e.g. ["layers.0", "attention.core"]
        self.masks = []                    # dicts: site, kind, draw, step, micro_batch, p, mask
        self.counts = {}                   # module path -> [original, recompute]
        self.saves = []                    # this micro-batch's saved tensors (dicts, saved.py)
        self.checkpoint_inputs = {}        # storage pointer of a running checkpoint's input -> owner module
        self.param_storages = set(param_storages)
        self.offloaded = self.reloaded = 0  # bytes moved by an offload hook this micro-batch
        self.host_resident = 0              # bytes the offload hooks hold on the host right now
        self.moved = []                     # (weakref, save entry) of each tensor moved this micro-batch
        self.save_namer = None              # saved.SaveNamer while the recording hooks are on
        # A recompute that re-runs a region's Python but serves most ops from a cache
        # (selective activation checkpointing) recomputes a module only where one of its
        # ops really runs: with count_recompute_by_ops, a module entered in recompute
        # is counted when op_observer() sees one of its ops.
        self.count_recompute_by_ops = False
        self.pending = []                   # per path frame: module key not yet counted in this recompute

    @property
    def recompute(self):
        return self.phase == "backward"

    def start_micro_batch(self, step, micro_batch):
        self.step, self.micro_batch, self.saves = step, micro_batch, []
        self.offloaded = self.reloaded = 0
        self.moved = []
        self.phase = "forward"

    def module_path(self):
        return ".".join(self.path)

    @contextlib.contextmanager
    def module(self, name):
        """Counts one invocation of module `name` (below the current path)."""
        self.path.append(name)
        key = self.module_path()
        c = self.counts.setdefault(key, [0, 0])
        if self.recompute and self.count_recompute_by_ops:
            self.pending.append(key)
        else:
            c[1 if self.recompute else 0] += 1
            self.pending.append(None)
        try:
            yield
        finally:
            self.path.pop()
            self.pending.pop()

    def op_ran(self):
        """An op really ran in recompute: every module around it not yet counted is."""
        for i, key in enumerate(self.pending):
            if key is not None:
                self.counts[key][1] += 1
                self.pending[i] = None

    def op_observer(self):
        """A dispatch mode calling op_ran() for each op that reaches it in recompute (a
        cache in a mode above it answers the ops it holds without passing them on)."""
        return _OpObserver(self)

    def under_current_path(self, fn):
        """fn, run under today's module path whenever it runs: a checkpoint re-runs it
        inside backward, when the forward's path stack has long unwound."""
        path = list(self.path)

        def wrapped(*args):
            saved, self.path = self.path, list(path)
            saved_pending, self.pending = self.pending, [None] * len(path)
            try:
                return fn(*args)
            finally:
                self.path, self.pending = saved, saved_pending

        return wrapped

    def record_mask(self, site, kind, p, keep):
        """One dropout draw the framework made: `keep` is its own mask (true = kept)."""
        self.masks.append({"site": site, "kind": kind, "draw": "recompute" if self.recompute else "forward",
                           "step": self.step, "micro_batch": self.micro_batch, "p": p,
                           "mask": keep.detach().to(torch.uint8).clone()})

    def dropout(self, x, p, site, kind):
        """PyTorch's own dropout kernel (aten::native_dropout, the op F.dropout lowers to
        under autograd), which returns its mask; the mask is logged, not derived."""
        if p <= 0.0:
            return x
        out, keep = torch.native_dropout(x, p, True)
        self.record_mask(site, kind, p, keep)
        return out

    def counts_json(self):
        return {k: {"original": v[0], "recompute": v[1]} for k, v in self.counts.items()}


_IGNORED = {torch.ops.aten.detach.default}  # checkpoint's own bookkeeping, no computation


class _OpObserver(TorchDispatchMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.rec.recompute and func not in _IGNORED:
            self.rec.op_ran()
        return func(*args, **(kwargs or {}))
