"""Deliberate mistakes the adapter can run with (RCTS_DEEPSPEED_FAULT=name), injected at
run time around DeepSpeed's own checkpointing code (nothing of DeepSpeed is edited), so
tests show the checks that must catch each one do (tests/adapter/deepspeed names them):

  no_rng_restore    CheckpointFunction.backward recomputes without restoring the RNG
                    states its forward saved (the saved CPU, device and tracker states are
                    replaced by the current ones before DeepSpeed's backward runs): the
                    recompute draws fresh masks                 -> bitwise, masks
  no_tracker_restore  the tracker's set_states does nothing, so neither checkpoint
                    implementation (CheckpointFunction, non_reentrant_checkpoint) puts the
                    tracker streams back for the recompute: attention dropout, inside the
                    fork, draws fresh masks                     -> masks, bitwise
  gather_wrong_order  gather_partitioned_activations puts the ranks' partitions in the
                    wrong order (rotated by one rank) before the recompute runs on them
                                                                -> bitwise
  stale_cpu_buffer  a CPU-checkpointed input is held in one host buffer per (shape,
                    dtype), reused by the next checkpoint before the first is reloaded (a
                    pool without a wait): the recompute reads another checkpoint's input
                                                                -> bitwise
  tp_seed_without_rank  the mpu tells model_parallel_cuda_manual_seed tp rank 0 on every
                    rank: attention masks equal across TP ranks -> masks_across_ranks
"""
import os

import torch

KNOWN = {"no_rng_restore", "no_tracker_restore", "gather_wrong_order", "stale_cpu_buffer", "tp_seed_without_rank"}


def current():
    value = os.environ.get("RCTS_DEEPSPEED_FAULT", "")
    if value and value not in KNOWN:
        raise SystemExit(f"error: RCTS_DEEPSPEED_FAULT={value!r} is not one of {sorted(KNOWN)}")
    return value


def active(name):
    assert name in KNOWN, name
    return current() == name


def install():
    """Wraps DeepSpeed's functions for the active fault; returns what undoes it."""
    from deepspeed.runtime.activation_checkpointing import checkpointing as ck

    undo = []

    def patch(owner, name, new):
        old = getattr(owner, name)
        setattr(owner, name, new)
        undo.append(lambda: setattr(owner, name, old))
        return old

    if active("no_rng_restore"):
        orig = ck.CheckpointFunction.backward

        def backward(ctx, *grads):  # what the forward saved is replaced by the states now
            ctx.fwd_cpu_rng_state = torch.get_rng_state()
            ctx.fwd_cuda_rng_state = torch.get_rng_state()
            ctx.fwd_cuda_rng_state_tracker = ck.get_cuda_rng_tracker().get_states()
            return orig(ctx, *grads)

        patch(ck.CheckpointFunction, "backward", staticmethod(backward))
    if active("no_tracker_restore"):
        patch(ck.CudaRNGStatesTracker, "set_states", lambda self, states: None)
    if active("gather_wrong_order"):
        gather = ck.gather_partitioned_activations

        def rotated(tensors, device=None):
            out = gather(tensors, device)
            for t in out:
                if torch.is_tensor(t) and t.is_floating_point() and ck.mp_size > 1:
                    flat = t.data.reshape(-1)
                    parts = flat.chunk(ck.mp_size)
                    t.data = torch.cat(parts[1:] + parts[:1]).view_as(t.data)
            return out

        patch(ck, "gather_partitioned_activations", rotated)
    if active("stale_cpu_buffer"):
        partition = ck.partition_activations
        pool = {}

        def pooled(args, cpu_checkpoint, contiguous_checkpoint):
            out = partition(args, cpu_checkpoint, contiguous_checkpoint)
            if not cpu_checkpoint:
                return out
            res = []
            for t in out:
                if torch.is_tensor(t) and t.is_floating_point():
                    buf = pool.setdefault((tuple(t.shape), t.dtype), torch.empty_like(t, device="cpu"))
                    t = buf.copy_(t)
                res.append(t)
            return res

        patch(ck, "partition_activations", pooled)
    return undo
