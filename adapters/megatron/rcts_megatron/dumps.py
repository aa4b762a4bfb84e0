"""Format-1 dumps of the Megatron adapter's runs (docs/dump-format.md), written with the
adapter kit's writer (adapters/kit); only the Megatron parts are here: per-mask stream names (the tracker
stream forked at the draw), opaque RNG states of the emulated device and each tracker
stream, Megatron's parameter names beside rcts's."""
import os

from rcts_adapter_kit import dump as kit

BACKEND = "megatron-cpu"


def write_run(root, meta, cfg, out, implementation):
    d = kit.run_dir(root, meta["case_id"], BACKEND, meta["run"], meta["rank"]["world_rank"])
    w = kit.Writer(d)
    mbs = []
    for e in out["micro_batches"]:
        stem = f"s{e['step']}.mb{e['micro_batch']}"
        mbs.append({
            "step": e["step"], "micro_batch": e["micro_batch"],
            "loss": {"value": e["loss"], "bits": kit._bits(e["loss"])},
            "input": w.tensor(e["input"], stem + ".input"), "target": w.tensor(e["target"], stem + ".target"),
            "output": w.tensor(e["output"], stem + ".output"),
            "input_grad": None if e["input_grad"] is None else w.tensor(e["input_grad"], stem + ".input_grad"),
            "param_grads": w.named(e["param_grads"], stem + ".grad."),
            "rng_after": {"opaque": e["rng_after"]},
            "saved_bytes_per_layer": e["saved_bytes_per_layer"], "saved_tensors": e["saved_tensors"],
            "saved_after_forward": e["saved_after_forward"],
            "host_resident_after_forward": e["host_resident_after_forward"]})
    steps = [{"step": s["step"], "params_before": w.named(s["params_before"], f"s{s['step']}.param."),
              "grads": w.named(s["grads"], f"s{s['step']}.grad.")} for s in out["steps"]]
    masks = [{"site": m["site"], "kind": m["kind"], "stream": m["stream"], "step": m["step"],
              "micro_batch": m["micro_batch"], "draw": m["draw"], "p": m["p"],
              "layout": "attention_mask" if m["kind"] == "attention" else "hidden_mask",
              "mask": w.tensor(m["mask"], f"mask.{k:05d}.{m['site']}")} for k, m in enumerate(out["masks"])]
    params = w.named(out["parameters"], "param.", parameters=True)
    run = {"name": meta["run"], "role": meta["role"]}
    if meta.get("of_variant"):
        run["of_variant"] = meta["of_variant"]
    manifest = {
        "format": kit.FORMAT, "version": kit.VERSION,
        "case": {"id": meta["case_id"], "file": meta.get("case_file", "")}, "run": run,
        "implementation": {"name": "megatron-lm", "version": implementation, "backend": BACKEND,
                           "arithmetic": "megatron-core", "rng_states": "opaque", "mask_rule": "none"},
        "rank": meta["rank"], "config": cfg, "layouts": kit.LAYOUTS,
        "micro_batches": mbs, "steps": steps, "parameters": params, "masks": masks,
        "counts": out["counts"], "memory": {}}
    manifest["not_recorded"] = dict(out["not_recorded"])  # side effects: the framework shows none (driver.py)
    w.finish(manifest)
    return d
