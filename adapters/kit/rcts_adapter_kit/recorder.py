"""What an adapter observes while the framework runs: module invocations (original or
recompute), dropout draws with their masks, and the tensors saved for backward, each
tagged with the step, micro-batch and phase.

The phase is the adapter's own knowledge, not the framework's: the driver sets
"forward" before calling the model and "backward" before loss.backward(), so anything
the model code does while the phase is "backward" was re-run by a checkpoint.
"""
import contextlib

import torch


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

    @property
    def recompute(self):
        return self.phase == "backward"

    def start_micro_batch(self, step, micro_batch):
        self.step, self.micro_batch, self.saves = step, micro_batch, []
        self.offloaded = self.reloaded = 0
        self.phase = "forward"

    def module_path(self):
        return ".".join(self.path)

    @contextlib.contextmanager
    def module(self, name):
        """Counts one invocation of module `name` (below the current path)."""
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
