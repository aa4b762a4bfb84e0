"""How the adapter observes a run, and a saved-tensor hook a user would install, chosen
by environment (so the torchrun ranks see the same), each named in every dump's
implementation string.

RCTS_MEGATRON_SAVES (how saved tensors are recorded):
  shadow  (default) the step megatron-core computes runs with no saved-tensor hook: its
          saves are recorded in a shadow forward just before it, from the same inputs,
          parameters and RNG states (restored after it), whose graph is dropped unused.
          Any saved_tensors_hooks changes what autograd hands back on unpack (a new leaf
          per unpack), which megatron-core 0.12-0.15's CheckpointWithoutOutput depends on;
          the shadow keeps that out of the numbers the dump holds.
  hooks   the kit's recording hooks around the computed forward itself (the adapter
          before the shadow): on megatron-core <= 0.15 it makes output-discarding
          recompute lose its input gradients. For showing that, never for a verdict.
  none    nothing recorded but module counts: no saves, no dropout masks, no recompute
          watch. The numbers megatron-core computes untouched; the observation test
          compares them with the other modes', bit for bit.

RCTS_MEGATRON_USER_HOOKS (what a user wraps the step in):
  ""          nothing (default)
  save_on_cpu torch.autograd.graph.save_on_cpu() around each micro-batch's forward, as a
              user offloading activations to the host would (on the one CPU device the
              copies stay on the CPU; the bytes per layer are the shadow's, held the same).
"""
import os

SAVES = ("shadow", "hooks", "none")
USER_HOOKS = ("", "save_on_cpu")


def _get(name, allowed, default):
    value = os.environ.get(name, default)
    if value not in allowed:
        raise SystemExit(f"error: {name}={value!r} is not one of {list(allowed)}")
    return value


def saves():
    return _get("RCTS_MEGATRON_SAVES", SAVES, "shadow")


def user_hooks():
    return _get("RCTS_MEGATRON_USER_HOOKS", USER_HOOKS, "")


def check_release(want, version, where):
    """check-megatron --release sets RCTS_MEGATRON_RELEASE: the megatron-core imported must be
    that release (a stale PYTHONPATH would judge another one under its name)."""
    if want and version != want:
        from rcts_adapter_kit.errors import AdapterError
        raise AdapterError(f"RCTS_MEGATRON_RELEASE={want}: the megatron-core imported is {version} ({where})")


def description():
    text = f"saved tensors recorded: {saves()}"
    return text + (f"; user hook around each forward: torch.autograd.graph.{user_hooks()}" if user_hooks() else "")
