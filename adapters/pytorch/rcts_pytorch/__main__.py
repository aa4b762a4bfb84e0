"""rcts PyTorch adapter: run a case's baseline, variants and reruns with PyTorch's own
checkpoint and offload mechanisms and write format-1 dumps that `rcts check` judges.

  python3 -m rcts_pytorch CASE.json --rcts-dump ROOT --out OUT [--style reentrant|non_reentrant]

ROOT is what `rcts run CASE.json --dump ROOT` wrote: the adapter takes the parameters
before step 0, the inputs and the targets from rcts's baseline dump, and each run's
resolved config from rcts's dump of that run (so the runs are exactly rcts's), reading
ROOT/<case>/cpu/rank0/<run>/ and writing OUT/<case>/torch-cpu/rank0/<run>/. A case it
cannot express is not run: it prints "skip: <reason>", writes OUT/<case>/SKIPPED with
the reason and exits 0 (exit 3 with --fail-on-skip). Exit 2: bad input (the message names the file and field).

  python3 -m rcts_pytorch --serve

serves many cases in one process (the kit's worker: one JSON request per line on stdin,
each the arguments above; one answer per line), checking between cases that none left
torch's global state changed (the kit's isolation.TorchState).
"""
import argparse
import os
import sys

import torch

from . import driver  # noqa: I100  (first: puts the kit on sys.path from a checkout)
from rcts_adapter_kit import dump
from rcts_adapter_kit.case import Case, rcts_runs
from rcts_adapter_kit.errors import AdapterError, raised_in
from rcts_adapter_kit.worker import SERVE_FLAG, serve
from . import faults
from .mechanisms import CASE_KEYS, STYLES, unsupported


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rcts_pytorch", description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--rcts-dump", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--style", choices=STYLES, default="non_reentrant", help="one mode, dumps under --out")
    ap.add_argument("--styles", help="comma-separated modes in one process, dumps under OUT/pytorch-<mode>; "
                                     "prints skip[mode]: / wrote[mode]: / error[mode]: per mode")
    ap.add_argument("--fail-on-skip", action="store_true")
    a = ap.parse_args(argv)
    try:
        dump.out_dir(a.out)
        if not a.styles:
            return run_case(a, a.style, a.out, "")
        styles = a.styles.split(",")
        for s in styles:
            if s not in STYLES:
                raise AdapterError(f"--styles {a.styles}: '{s}' is not one of {', '.join(STYLES)}")
        rc = 0
        for s in styles:
            rc = max(rc, run_case(a, s, os.path.join(a.out, f"pytorch-{s}"), f"[{s}]"))
        return rc
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run_case(a, style, out, tag):
    case = Case(a.case)

    def skip(why):
        dump.mark_case(out, case.id, dump.SKIPPED, why)
        print(f"skip{tag}: {case.id}: {why}")
        return 3 if a.fail_on_skip else 0

    if "config_error" in case.expect:
        return skip("a config_error case runs nothing (rcts judges the config itself)")
    if 1 not in case.ranks:
        return skip(f"the case runs at world sizes {case.ranks}; the adapter runs one process")
    why = case.unmodelled(CASE_KEYS)
    if why:
        return skip(why)
    runs = rcts_runs(a.rcts_dump, case.id)
    base = dump.BaselineDump(runs["baseline"][0])
    for name, (d, manifest) in sorted(runs.items(), key=lambda r: r[0] != "baseline"):  # baseline first
        why = unsupported(manifest["config"], case.ranks)
        if why:
            return skip(f"run '{name}': {why}" if name != "baseline" else why)
    if style == "sac" and not any(m["config"]["recompute"]["recompute_granularity"] == "selective"
                                  for _, m in runs.values()):
        return skip("no selective recompute: SAC mode runs as non_reentrant (same checkpoints)")
    how = {"reentrant": "checkpoint use_reentrant=True", "non_reentrant": "checkpoint use_reentrant=False",
           "sac": "selective activation checkpointing (create_selective_checkpoint_contexts)"}[style]
    impl = {"name": "pytorch", "version": f"torch {torch.__version__}, {how}", "backend": "torch-cpu",
            "arithmetic": "pytorch", "generator": driver.GENERATOR, "memory_profile": driver.MEMORY_PROFILE}
    for name, (d, theirs) in runs.items():
        cfg, run_meta = theirs["config"], theirs["run"]
        try:
            out_run = driver.run(cfg, base.params, base.inputs, base.targets, style)
        except Exception as e:  # PyTorch's own code raised: a finding, not a skip; say where, in torch
            at = raised_in(e, "torch")
            where = f" at torch/{at[0]}:{at[1]}" if at else ""
            msg = f"torch raised: run '{name}': {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}{where}"
            dump.mark_case(out, case.id, dump.ERRORED, msg)
            print(f"error{tag}: {case.id}: {msg}")
            return 1
        meta = {"case_id": case.id, "case_file": a.case, "run": name, "role": run_meta["role"],
                "of_variant": run_meta.get("of_variant", ""), "rank": theirs.get("rank")}
        dump.write_run(dump.run_dir(out, case.id, impl["backend"], name), meta, cfg, out_run, impl)
    print(f"wrote{tag}: {case.id}: {len(runs)} runs ({style})")
    if faults.active("leave_saved_tensor_hooks"):
        torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)  # one fixed thread count: the same kernels for every run
    if sys.argv[1:] == [SERVE_FLAG]:
        from rcts_adapter_kit import saved
        from rcts_adapter_kit.isolation import TorchState
        from . import mechanisms, model
        # The faults' own state, which a fresh process would not have either.
        resets = (model._PRIVATE.clear, mechanisms._KEPT.clear, saved._STALE_POOL.clear)
        sys.exit(serve(main, TorchState(also=resets).between))
    sys.exit(main())
