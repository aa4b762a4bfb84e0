"""Saved-tensor byte accounting: saved-tensor hooks that observe every tensor autograd
saves during the forward (parameters are not activations and are not counted: Megatron-
LM's and rcts's accounting), bytes held per layer, and save_on_cpu wrapped so the bytes
it moves to the host and back are counted (the tensors and the copies are PyTorch's)."""
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .recorder import storage_ptr

# torch dtype -> the dump's dtype name (docs/dump-format.md, saved_tensors).
DTYPES = {torch.float64: "f64", torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
          torch.int64: "i64", torch.int32: "i32", torch.uint8: "u8", torch.bool: "bool"}
CHECKPOINT_OP = "torch.utils.checkpoint"


def tensor_fields(t):
    """The dump's dtype and shape of t; neither for a dtype the format has no name for."""
    return {"dtype": DTYPES[t.dtype], "shape": list(t.shape)} if t.dtype in DTYPES else {}


def note_save(rec, t, category=None, name=None, owner=None, op=None, watch=False):
    """Records one save of tensor t during the forward (nothing in backward). The op that
    saved it is `op`, or named by SaveNamer (a checkpoint's own input: CHECKPOINT_OP).
    `owner` (a module path, "" for none) makes it a checkpoint input. watch=True keeps a
    weak reference, for bytes counted at the end of the forward (at_end_of_forward)."""
    if rec.phase != "forward":
        return
    ptr = storage_ptr(t)
    if ptr in rec.param_storages:
        return
    if owner is None:
        owner = rec.checkpoint_inputs.get(ptr)
    entry = {"module": owner if owner is not None else rec.module_path(), "tensor": name or f"saved.{len(rec.saves)}",
             "bytes": t.numel() * t.element_size(),
             "category": category or ("checkpoint_input" if owner is not None else "saved_activation"),
             "storage": ptr, "offset": t.storage_offset(), "recompute": False, **tensor_fields(t)}
    if op is not None or owner is not None:
        entry["op"] = op or CHECKPOINT_OP
    else:
        namer = getattr(rec, "save_namer", None)
        if namer is not None:
            namer.name(entry, ptr)
    if watch:
        entry[_WATCHED] = weakref.ref(t)
    rec.saves.append(entry)


_WATCHED = "_tensor"  # a watched entry's weak reference; never written (at_end_of_forward drops it)


def at_end_of_forward(saves):
    """The saves as held at the end of the forward (Megatron-LM's rule, where a save's
    storage may be released after it was saved): a watched save nothing holds any more,
    or whose storage is freed (CheckpointWithoutOutput), holds 0 bytes and has no dtype
    and shape (a dump's bytes are its shape's); any other keeps what it had when saved."""
    out = []
    for s in saves:
        e = {k: v for k, v in s.items() if k != _WATCHED}
        ref = s.get(_WATCHED)
        t = ref() if ref is not None else None
        if ref is not None and (t is None or t.untyped_storage().nbytes() == 0):
            e["bytes"] = 0
            e.pop("dtype", None)
            e.pop("shape", None)
        elif t is not None:
            e.update(bytes=t.numel() * t.element_size(), **tensor_fields(t))
        out.append(e)
    return out


# Ops that compute nothing (views, checkpoint's detach): they neither save nor consume a save.
_NO_OP = {"aten::detach", "aten::view", "aten::_unsafe_view", "aten::t", "aten::transpose", "aten::permute",
          "aten::expand", "aten::slice", "aten::select", "aten::alias", "aten::as_strided", "aten::unsqueeze",
          "aten::squeeze", "aten::reshape", "aten::split", "aten::chunk", "aten::split_with_sizes", "aten::unbind"}


# Ops whose backward formula reads their own outputs (`result`, `result1`, ... in
# PyTorch's tools/autograd/derivatives.yaml): autograd saves those outputs after the op.
RESULT_SAVING = {"aten::_softmax", "aten::_log_softmax", "aten::native_layer_norm", "aten::native_dropout",
                 "aten::native_batch_norm", "aten::exp", "aten::tanh", "aten::sigmoid", "aten::sqrt", "aten::rsqrt",
                 "aten::_fused_dropout", "aten::_scaled_dot_product_flash_attention_for_cpu",
                 "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_flash_attention"}


class SaveNamer(TorchDispatchMode):
    """Names the op that saved each tensor. Autograd saves an op's inputs before the op
    runs (below autograd, where this mode sits) and its outputs after: a save of one of
    the last op's outputs is that op's when the op keeps its result (RESULT_SAVING), any
    other save belongs to the next op that runs. Observes only: every op runs as it
    would."""

    def __init__(self, rec):
        super().__init__()
        self.rec, self.last_op, self.last_outputs, self.pending = rec, "", set(), []

    def name(self, entry, ptr):
        if ptr in self.last_outputs and self.last_op in RESULT_SAVING:
            entry["op"] = self.last_op
        else:
            entry["op"] = ""
            self.pending.append(entry)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        op = func._schema.name
        if op in _NO_OP:
            return out
        for e in self.pending:
            e["op"] = op
        self.pending = []
        self.last_op = op
        outs = out if isinstance(out, (tuple, list)) else (out,)
        self.last_outputs = {storage_ptr(t) for t in outs if isinstance(t, torch.Tensor)}
        return out


class RecomputeWatch(TorchDispatchMode):
    """While backward runs: every tensor an op inside a recomputed module produces, by weak
    reference. still_held() lists those alive once backward ended (a recompute that keeps
    what it recomputed); the adapter drops its own references first."""

    def __init__(self, rec):
        super().__init__()
        self.rec, self.watched = rec, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if self.rec.recompute and self.rec.path:
            for t in (out if isinstance(out, (tuple, list)) else (out,)):
                if isinstance(t, torch.Tensor) and not t._is_view():
                    self.watched.append((weakref.ref(t), {
                        "module": self.rec.module_path(), "tensor": "recomputed", "op": func._schema.name,
                        "bytes": t.numel() * t.element_size(), "category": "saved_activation",
                        "storage": storage_ptr(t), "offset": t.storage_offset(), "recompute": True,
                        **tensor_fields(t)}))
        return out

    def still_held(self):
        import gc
        gc.collect()
        held, seen = [], {storage_ptr(m["mask"]) for m in self.rec.masks}  # the recorder's own mask log

        for ref, e in self.watched:
            if ref() is not None and e["storage"] not in seen:
                seen.add(e["storage"])
                held.append(e)
        return held


def held_bytes(saves):
    """Bytes of distinct tensors the saves keep (a tensor saved twice is held once)."""
    return sum({(s["storage"], s["offset"], s["bytes"]): s["bytes"] for s in saves}.values())


def bytes_per_layer(saves, n_layers, prefix="layers"):
    """held_bytes of the saves whose module lies below `<prefix>.<l>`, per layer l."""
    return [held_bytes([s for s in saves if s["module"].split(".")[:2] == [prefix, str(l)]])
            for l in range(n_layers)]


class RecordingHooks(torch.autograd.graph.saved_tensors_hooks):
    """Saved-tensor hooks that only observe: the tensor itself is what is saved; a
    SaveNamer names the op of each save while they are on. `note(rec, t)` records a save
    (note_save; an adapter with its own attribution wraps it)."""

    def __init__(self, rec, note=note_save):
        self.rec = rec

        def pack(t):
            note(rec, t)
            return t

        super().__init__(pack, lambda t: t)

    def __enter__(self):
        self.rec.save_namer = SaveNamer(self.rec)
        self.rec.save_namer.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        namer, self.rec.save_namer = self.rec.save_namer, None
        namer.__exit__(*exc)


_STALE_POOL = {}


def device_copies_alive(rec, keep=()):
    """The tensors an offload hook moved to the host this micro-batch whose device storage
    is still alive (their bytes are still held on the device), leaving out storages the
    adapter holds itself (`keep`: the block's input and output) and those a save on the
    device holds anyway."""
    import gc
    gc.collect()
    skip = {storage_ptr(t) for t in keep} | {s["storage"] for s in rec.saves}
    out, seen = [], set()
    for ref, e in getattr(rec, "moved", []):
        if ref() is not None and e["storage"] not in skip and e["storage"] not in seen:
            seen.add(e["storage"])
            out.append(e)
    return out


def device_held_bytes(rec, saves, keep=()):
    """Device bytes held for backward when the forward ends: the saves (held_bytes) and
    every tensor an offload moved whose device copy is still alive (device_copies_alive,
    distinct storages none of the saves holds)."""
    return held_bytes(saves) + sum(e["bytes"] for e in device_copies_alive(rec, keep))


def offload_hooks(rec, min_elements=0, pin_memory=False, stale=False, keep_device_copy=False):
    """torch.autograd.graph.save_on_cpu with its own pack/unpack wrapped so the bytes it
    moves are counted; each moved tensor is watched by weak reference, so a device copy
    that outlives its move is seen (device_copies_alive). A tensor with fewer than
    `min_elements` elements, and every parameter, stays on the device (Megatron-LM's
    min_offloaded_tensor_size rule). Faults for tests: stale=True, one host buffer per
    (shape, dtype), reused by the next save before the earlier one is reloaded;
    keep_device_copy=True, the packed value also holds the device tensor (never freed)."""
    s = torch.autograd.graph.save_on_cpu(pin_memory=pin_memory)
    inner_pack, inner_unpack = s.pack_hook, s.unpack_hook
    if stale:
        def inner_pack(t, inner=inner_pack):
            buf = _STALE_POOL.setdefault((tuple(t.shape), t.dtype), torch.empty_like(t, device="cpu"))
            buf.copy_(t)
            return (t.device, buf)

    def pack(t):
        if t.numel() < min_elements or storage_ptr(t) in rec.param_storages:
            note_save(rec, t)  # held on the device like any save outside the hooks
            return ("stays", 0, t)
        packed = (inner_pack(t), t if keep_device_copy else None)
        if rec.phase == "forward":
            n = t.numel() * t.element_size()
            rec.offloaded += n
            rec.host_resident += n
            if hasattr(rec, "moved"):
                rec.moved.append((weakref.ref(t), {
                    "module": rec.module_path(), "tensor": "offloaded, still on the device", "bytes": n,
                    "category": "saved_activation", "storage": storage_ptr(t), "offset": t.storage_offset(),
                    "recompute": False, "op": "torch.autograd.graph.save_on_cpu", **tensor_fields(t)}))
            return ("moved", n, packed)
        return ("kept", 0, packed)

    def unpack(p):
        kind, n, packed = p
        if kind == "stays":
            return packed
        if kind == "moved":
            rec.reloaded += n
            rec.host_resident -= n
        return inner_unpack(packed[0])

    s.pack_hook, s.unpack_hook = pack, unpack
    return s
