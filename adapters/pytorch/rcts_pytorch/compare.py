"""The adapter's faithful-model claim: its baseline, run from rcts's dumped parameters and
data, gives rcts's losses, outputs, input gradients and per-micro-batch parameter
gradients within a stated tolerance.

  python3 -m rcts_pytorch.compare CASE.json --rcts-dump ROOT --tolerance T

Error of a tensor: max |pytorch - rcts| / max |rcts| (the f64 oracle's measure,
docs/decisions.md). Prints the worst tensor of each kind; exits 0 when every error is
<= T, 1 when one is not, 2 on bad input. Dropout must be off: PyTorch draws its own
masks (not rcts's Philox), so with dropout the two models see different masks.
"""
import argparse
import sys

import torch

from . import driver  # noqa: I100  (first: puts the kit on sys.path from a checkout)
from rcts_adapter_kit import dump
from rcts_adapter_kit.case import Case, rcts_runs
from rcts_adapter_kit.errors import AdapterError


def rel_err(a, b):
    a, b = a.double(), b.double()
    scale = b.abs().max().item()
    diff = (a - b).abs().max().item()
    return diff / scale if scale > 0 else diff


def compare(cfg, base, style="non_reentrant"):
    """{kind: (worst error, tensor name)} of the adapter's baseline against rcts's."""
    out = driver.run(cfg, base.params, base.inputs, base.targets, style)
    worst = {}

    def note(kind, name, e):
        if kind not in worst or e > worst[kind][0]:
            worst[kind] = (e, name)

    for i, mb in enumerate(out["micro_batches"]):
        tag = f"step {mb['step']} micro-batch {mb['micro_batch']}"
        note("loss", tag, abs(mb["loss"] - base.losses[i]) / abs(base.losses[i]))
        note("output", tag, rel_err(mb["output"], base.outputs[i]))
        if mb["input_grad"] is not None:
            note("input_grad", tag, rel_err(mb["input_grad"], base.input_grads[i]))
        for (name, g), (rname, rg) in zip(mb["param_grads"], base.grads_after[i]):
            if name != rname:
                raise dump.DumpError(f"{base.dir}: parameter gradient '{rname}' where the adapter has '{name}'")
            note("param_grad", f"{name} ({tag})", rel_err(g, rg))
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rcts_pytorch.compare", description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--rcts-dump", required=True)
    ap.add_argument("--tolerance", type=float, required=True)
    ap.add_argument("--style", choices=["reentrant", "non_reentrant"], default="non_reentrant")
    a = ap.parse_args(argv)
    try:
        case_id = Case(a.case).id
        base = dump.BaselineDump(rcts_runs(a.rcts_dump, case_id)["baseline"][0])
        m, run = base.config["model"], base.config["run"]
        if run["training"] and (m["attention_dropout"] > 0 or m["hidden_dropout"] > 0):
            print(f"error: {a.case}: the comparison needs dropout off (PyTorch draws its own masks); "
                  f"attention_dropout = {m['attention_dropout']}, hidden_dropout = {m['hidden_dropout']}",
                  file=sys.stderr)
            return 2
        worst = compare(base.config, base, a.style)
    except (KeyError, AdapterError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    bad = False
    for kind, (e, name) in sorted(worst.items()):
        ok = e <= a.tolerance
        bad |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {kind:<10} max rel error {e:.3e} (tolerance {a.tolerance:.1e}) at {name}")
    print(f"{case_id}: PyTorch baseline {'differs from' if bad else 'matches'} rcts's {'beyond' if bad else 'within'} {a.tolerance:.1e}")
    return 1 if bad else 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    sys.exit(main())
