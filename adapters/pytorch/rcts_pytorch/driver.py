"""One run (baseline, variant or rerun) of the PyTorch block: steps of micro-batches,
loss 0.5 * mean((y - target)^2), gradients accumulated over a step's micro-batches, SGD
with rate 2^-6 between steps (docs/decisions.md), PyTorch's default CPU generator seeded
with run.seed. Returns everything a format-1 dump holds, as plain Python and tensors.
Shared with the DeepSpeed adapter, which passes its own mechanism (DeepSpeed's
checkpoint, its TP), generators (with DeepSpeed's tracker streams) and seeding
(DeepSpeed's model_parallel_cuda_manual_seed).
"""
import contextlib

import torch
from rcts_adapter_kit.recorder import Recorder, storage_ptr
from rcts_adapter_kit.rng import DEFAULT_CPU, Generators
from rcts_adapter_kit.saved import RecomputeWatch, RecordingHooks, at_end_of_forward, bytes_per_layer, device_held_bytes

from .mechanisms import Mechanism
from .model import Block

SGD_RATE = 2.0 ** -6
GENERATOR = DEFAULT_CPU
# What the block's saved tensors are judged against: this block under CPU autograd
# (reference/memory_model/saved_profile.hpp).
MEMORY_PROFILE = "torch-cpu"
# rcts's side effects (tokens_seen per layer, FP8 amax histories) are state a layer
# updates once per forward; PyTorch's block has none, so any count would be the adapter's
# own, which a recompute never reaches: comparing it could never fail.
NO_SIDE_EFFECTS = ("PyTorch's block updates no state per forward (no tokens_seen counter, no FP8 amax history); "
                   "a count kept by the adapter's driver would be the adapter's, not PyTorch's")


def run(cfg, initial_params, inputs, targets, style, mechanism=None, generators=None, seed=torch.manual_seed,
        recorder=Recorder):
    """mechanism(cfg, rec) -> the mechanism object (default: PyTorch's, in `style`);
    generators: a kit rng.Generators (default: PyTorch's default CPU generator);
    seed(run.seed) seeds them; recorder: the kit's Recorder or a subclass."""
    act = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}[cfg["model"]["activation_dtype"]]
    steps, per = cfg["run"]["steps"], cfg["run"]["micro_batches"]
    training = cfg["run"]["training"]
    n_layers = cfg["model"]["num_layers"]
    params = {n: t.clone().requires_grad_(training) for n, t in initial_params}
    order = [n for n, _ in initial_params]
    rec = recorder({storage_ptr(p) for p in params.values()})
    gens = generators or Generators()
    block = Block(params, cfg, act, rec, mechanism(cfg, rec) if mechanism else Mechanism(cfg, style, rec))
    seed(cfg["run"]["seed"])

    out = {"micro_batches": [], "steps": [], "not_recorded": {"side_effects": NO_SIDE_EFFECTS}}
    for step in range(steps):
        for p in params.values():
            p.grad = None
        before = [(n, params[n].detach().clone()) for n in order]
        for mb in range(per):
            i = step * per + mb
            rec.start_micro_batch(step, mb)
            x = inputs[i].clone().requires_grad_(training)
            with torch.set_grad_enabled(training), RecordingHooks(rec), gens.guard():
                y = block.forward(x)
            saves = at_end_of_forward(rec.saves)  # watched saves (DeepSpeed's checkpoint inputs) as held now
            # Device bytes held for backward: the saves, and any tensor an offload moved whose
            # device copy is still alive (the block's own input and output aside).
            device_held, host_held = device_held_bytes(rec, saves, keep=(x, y)), rec.host_resident
            loss = 0.5 * ((y.float() - targets[i].float()) ** 2).mean()
            watch = RecomputeWatch(rec)
            if training:
                rec.phase = "backward"
                with gens.guard(), (rec.op_observer() if rec.count_recompute_by_ops else contextlib.nullcontext()), \
                        watch:
                    loss.backward()
                rec.phase = "forward"
            held_after = watch.still_held()
            gens.check()
            per_layer = bytes_per_layer(saves, n_layers)
            out["micro_batches"].append({
                "step": step, "micro_batch": mb, "loss": float(loss.detach()),
                "input": inputs[i], "target": targets[i], "output": y.detach(),
                "input_grad": x.grad if training else None,
                "param_grads": [(n + ".grad", (params[n].grad if params[n].grad is not None
                                               else torch.zeros_like(params[n])).detach().clone()) for n in order],
                "rng_after": gens.digest(), "saved_tensors": saves, "saved_bytes_per_layer": per_layer,
                "held_after_backward": held_after,
                "saved_after_forward": device_held, "host_resident_after_forward": host_held,
                "offloaded_bytes": rec.offloaded, "reloaded_bytes": rec.reloaded})
        grads = [(n + ".grad", (params[n].grad if params[n].grad is not None else torch.zeros_like(params[n]))
                  .detach().clone()) for n in order]
        out["steps"].append({"step": step, "params_before": before, "grads": grads})
        if training and step + 1 < steps:
            with torch.no_grad():
                for n in order:
                    params[n].sub_(params[n].grad * SGD_RATE)
    out["parameters"] = [(n, params[n].detach().clone()) for n in order]
    out["masks"] = rec.masks
    out["counts"] = rec.counts_json()
    return out
