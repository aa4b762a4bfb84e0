"""Deliberate mistakes the adapter can be run with (RCTS_PYTORCH_FAULT=name), so tests can
show that `rcts check` and the faithful-model comparison catch bugs of the kinds real
recompute, RNG and offload code has had, as rcts's own compiled-in mutants do for the
reference (tests/adapter names the check each must fail):

  no_preserve_rng       checkpoint(..., preserve_rng_state=False): the recompute draws fresh masks
  wrong_chunk_input     full recompute: every chunk after the first is recomputed from the
                        block's input instead of its own (Megatron-LM's uniform-chunk bug)
  stale_offload_buffer  save_on_cpu copies into one host buffer per (shape, dtype), reused
                        before its reload (a pool without a wait): the reload returns another
                        tensor's bytes
  unrecorded_generator  attention dropout draws from a private torch.Generator the adapter
                        does not record: the run must fail, not pass the rng check
  qkv_interleaved       read q, k, v per head interleaved (Megatron-LM's order), not [q | k | v]
  leak_saved_tensor     each layer ends with y * ones_like(y): a numerical no-op that keeps one
                        more tensor for backward (aten::mul saves the ones)
  offload_keeps_device_copy  save_on_cpu's packed value also holds the device tensor: the
                        offload copies to the host but never frees the device copy
  recompute_keeps_outputs  every checkpointed region's recompute output is kept in a list
                        after backward (what it recomputed is never freed)
  leave_saved_tensor_hooks  after a case, a saved-tensor hook pair stays installed: harmless
                        to a process that exits, the state a worker serving the next case
                        must catch (isolation.TorchState)
"""
import os

KNOWN = {"no_preserve_rng", "wrong_chunk_input", "stale_offload_buffer", "unrecorded_generator", "qkv_interleaved",
         "leak_saved_tensor", "offload_keeps_device_copy", "recompute_keeps_outputs", "leave_saved_tensor_hooks"}


def active(name):
    assert name in KNOWN, name
    value = os.environ.get("RCTS_PYTORCH_FAULT", "")
    if value and value not in KNOWN:
        raise SystemExit(f"error: RCTS_PYTORCH_FAULT={value!r} is not one of {sorted(KNOWN)}")
    return value == name
