"""Saved-tensor byte accounting: saved-tensor hooks that observe every tensor autograd
saves during the forward (parameters are not activations and are not counted: Megatron-
LM's and rcts's accounting), bytes held per layer, and save_on_cpu wrapped so the bytes
it moves to the host and back are counted (the tensors and the copies are PyTorch's)."""
import torch

from .recorder import storage_ptr


def note_save(rec, t, category=None, name=None, owner=None):
    """Records one save of tensor t during the forward (nothing in backward)."""
    if rec.phase != "forward":
        return
    ptr = storage_ptr(t)
    if ptr in rec.param_storages:
        return
    owner = owner or rec.checkpoint_inputs.get(ptr)
    rec.saves.append({"module": owner or rec.module_path(), "tensor": name or f"saved.{len(rec.saves)}",
                      "bytes": t.numel() * t.element_size(),
                      "category": category or ("checkpoint_input" if owner is not None else "saved_activation"),
                      "storage": ptr, "offset": t.storage_offset(), "recompute": False})


def held_bytes(saves):
    """Bytes of distinct tensors the saves keep (a tensor saved twice is held once)."""
    return sum({(s["storage"], s["offset"], s["bytes"]): s["bytes"] for s in saves}.values())


def bytes_per_layer(saves, n_layers, prefix="layers"):
    """held_bytes of the saves whose module lies below `<prefix>.<l>`, per layer l."""
    return [held_bytes([s for s in saves if s["module"].split(".")[:2] == [prefix, str(l)]])
            for l in range(n_layers)]


class RecordingHooks(torch.autograd.graph.saved_tensors_hooks):
    """Saved-tensor hooks that only observe: the tensor itself is what is saved."""

    def __init__(self, rec):
        def pack(t):
            note_save(rec, t)
            return t

        super().__init__(pack, lambda t: t)


def offload_hooks(rec, min_elements=0, pin_memory=False):
    """torch.autograd.graph.save_on_cpu with its own pack/unpack wrapped so the bytes it
    moves are counted. A tensor with fewer than `min_elements` elements, and every
    parameter, stays on the device (Megatron-LM's min_offloaded_tensor_size rule)."""
    s = torch.autograd.graph.save_on_cpu(pin_memory=pin_memory)
    inner_pack, inner_unpack = s.pack_hook, s.unpack_hook

    def pack(t):
        if t.numel() < min_elements or storage_ptr(t) in rec.param_storages:
            note_save(rec, t)  # held on the device like any save outside the hooks
            return ("stays", 0, t)
        packed = inner_pack(t)
        if rec.phase == "forward":
            n = t.numel() * t.element_size()
            rec.offloaded += n
            rec.host_resident += n
            return ("moved", n, packed)
        return ("kept", 0, packed)

    def unpack(p):
        kind, n, packed = p
        if kind == "stays":
            return packed
        if kind == "moved":
            rec.reloaded += n
            rec.host_resident -= n
        return inner_unpack(packed)

    s.pack_hook, s.unpack_hook = pack, unpack
    return s
