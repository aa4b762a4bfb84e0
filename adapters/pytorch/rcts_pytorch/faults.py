"""Deliberate mistakes the adapter can be run with (RCTS_PYTORCH_FAULT=name), so tests can
show that `rcts check` and the faithful-model comparison catch them, as rcts's own
compiled-in mutants do for the reference:

  no_preserve_rng    checkpoint(..., preserve_rng_state=False): the recompute draws fresh masks
  qkv_interleaved    read q, k, v per head interleaved (Megatron-LM's order), not [q | k | v]
"""
import os

KNOWN = {"no_preserve_rng", "qkv_interleaved"}


def active(name):
    assert name in KNOWN, name
    value = os.environ.get("RCTS_PYTORCH_FAULT", "")
    if value and value not in KNOWN:
        raise SystemExit(f"error: RCTS_PYTORCH_FAULT={value!r} is not one of {sorted(KNOWN)}")
    return value == name
