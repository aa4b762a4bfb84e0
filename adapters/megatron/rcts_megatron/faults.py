"""Deliberate mistakes the adapter can run with (RCTS_MEGATRON_FAULT=name), injected at run
time around megatron-core's own code (nothing of Megatron is edited), so tests show the
checks that must catch each one do:

  no_rng_restore    CheckpointFunction/CheckpointWithoutOutput recompute without restoring the
                    RNG states they saved (Megatron's _set_all_rng_states made a no-op): the
                    recompute draws fresh masks          -> bitwise, masks (recompute draw != forward)
  outside_fork      the recompute of a checkpoint runs with the tracker forks made no-ops
                    (get_cuda_rng_tracker().fork() yields without switching state while the
                    phase is backward): attention dropout draws from the default stream
                                                          -> bitwise, masks
  chunk_input       full uniform recompute: every layer of a chunk is re-run from the chunk's
                    input (the 2023 uniform-chunk bug, re-created by wrapping TransformerLayer
                    calls during recompute)              -> bitwise
  tp_seed_without_rank  every TP rank seeds megatron-core's tracker with tp_rank 0 (the caller
                    forgets the rank): attention masks equal across TP ranks
                                                          -> masks_across_ranks
  ep_seed_without_rank  every EP rank seeds megatron-core's tracker with ep_rank 0 (the caller
                    forgets the rank): the expert-parallel-rng stream equal across EP ranks
                                                          -> masks_across_ranks (expert streams)
  aux_loss_counted_twice  a router that runs in a recompute logs its load-balancing loss
                    twice into megatron-core's tracker (Megatron-LM #1330 re-created by wrapping
                    router.save_to_aux_losses_tracker)   -> bitwise (side effects)
  qkv_layout        load QKV rows without Megatron's per-head interleave (a porting mistake)
                                                          -> faithful-model comparison
  leak_saved_tensor  each layer's MLP output times ones_like: a numerical no-op that keeps
                    one more tensor per layer for backward -> memory (extra tensor)
  recompute_keeps_outputs  what core attention, the MLP and the layernorms return while
                    they are recomputed is kept in a list: alive after backward
                                                          -> memory (held after backward)
  shadow_rng_not_restored  the shadow forward that records saved tensors (modes.py) leaves
                    the RNG states it advanced: the computed forward draws other masks than
                    megatron-core alone would   -> the observation test (RCTS_MEGATRON_SAVES
                    none vs shadow differ), bitwise
"""
import os

KNOWN = {"no_rng_restore", "outside_fork", "chunk_input", "tp_seed_without_rank", "ep_seed_without_rank",
         "aux_loss_counted_twice", "qkv_layout", "leak_saved_tensor", "recompute_keeps_outputs",
         "shadow_rng_not_restored"}


def current():
    value = os.environ.get("RCTS_MEGATRON_FAULT", "")
    if value and value not in KNOWN:
        raise SystemExit(f"error: RCTS_MEGATRON_FAULT={value!r} is not one of {sorted(KNOWN)}")
    return value


def active(name):
    assert name in KNOWN, name
    return current() == name
