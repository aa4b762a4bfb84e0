"""The generators a run draws from: their states after every micro-batch (sha256 of the
state bytes, the dump's "opaque" RNG states) and a guard that fails the run when an op
draws from a generator the adapter does not record.

Every random ATen op carries the tag nondeterministic_seeded; the guard, a
TorchDispatchMode, sees each one (forward and recompute alike, eager mode), finds the
generator it draws from (its `generator` argument, else the device's default generator)
and counts the draw against the recorded generator, or notes the draw as unrecorded.
The driver calls check() after each micro-batch: an unrecorded draw is an error naming
the op, so no check can pass on states it never saw."""
import hashlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .errors import AdapterError

DEFAULT_CPU = "torch.default_cpu_generator"


class UnrecordedDraw(AdapterError):
    pass


def _state_bytes(g):
    return g.get_state().numpy().tobytes()


class Generators:
    """Named generators a run may draw from (default: PyTorch's default CPU generator)."""

    def __init__(self, named=None):
        self.named = dict(named) if named is not None else {DEFAULT_CPU: torch.default_generator}
        self.draws = {name: 0 for name in self.named}
        self.unrecorded = []  # (op name, generator description)

    def digest(self):
        """{name: sha256 hex of its state}: the dump's opaque rng_after."""
        return {n: hashlib.sha256(_state_bytes(g)).hexdigest() for n, g in self.named.items()}

    def name_of(self, g):
        """The recorded name of generator g. A generator reaches a dispatch mode as a new
        Python object (no identity, no equality), so sameness is tested on the state:
        change the recorded one's state and see whether g's changed with it."""
        for n, h in self.named.items():
            if h is g:
                return n
        state = g.get_state()
        for n, h in self.named.items():
            if h.device != g.device or not torch.equal(h.get_state(), state):
                continue
            probe = torch.Generator(device=h.device).manual_seed(h.initial_seed() ^ 0x5A5A).get_state()
            h.set_state(probe)
            same = torch.equal(g.get_state(), probe)
            h.set_state(state)
            if same:
                return n
        return None

    def guard(self):
        return _DrawGuard(self)

    def check(self):
        if self.unrecorded:
            op, what = self.unrecorded[0]
            raise UnrecordedDraw(f"{op} drew from {what}, a generator the adapter does not record "
                                 f"({len(self.unrecorded)} such draws; recorded: {sorted(self.named)})")


def _generator_of(func, args, kwargs):
    g = kwargs.get("generator")
    if g is None:
        g = next((a for a in args if isinstance(a, torch.Generator)), None)
    if g is not None:
        return g
    dev = kwargs.get("device")
    if dev is None:
        t = next((a for a in args if isinstance(a, torch.Tensor)), None)
        dev = t.device if t is not None else torch.device("cpu")
    dev = torch.device(dev)
    if dev.type == "cpu":
        return torch.default_generator
    return ("default generator of", str(dev))


class _DrawGuard(TorchDispatchMode):
    def __init__(self, gens):
        super().__init__()
        self.gens = gens

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded in func.tags:
            g = _generator_of(func, args, kwargs)
            name = self.gens.name_of(g) if isinstance(g, torch.Generator) else None
            if name is None:
                what = " ".join(g) if isinstance(g, tuple) else f"generator {g!r} (device {g.device})"
                self.gens.unrecorded.append((str(func), what))
            else:
                self.gens.draws[name] += 1
        return func(*args, **kwargs)
