"""rcts PyTorch adapter: run a case's baseline, variants and reruns with PyTorch's own
checkpoint and offload mechanisms and write format-1 dumps that `rcts check` judges.

  python3 -m rcts_pytorch CASE.json --rcts-dump ROOT --out OUT [--style reentrant|non_reentrant]

ROOT is what `rcts run CASE.json --dump ROOT` wrote: the adapter takes the parameters
before step 0, the inputs and the targets from rcts's baseline dump, and each run's
resolved config from rcts's dump of that run (so the runs are exactly rcts's), reading
ROOT/<case>/cpu/rank0/<run>/ and writing OUT/<case>/torch-cpu/rank0/<run>/. A case it
cannot express is not run: it prints "skip: <reason>", writes OUT/<case>/SKIPPED with
the reason and exits 0 (exit 3 with --fail-on-skip). Exit 2: bad input (the message names the file and field).
"""
import argparse
import os
import sys

import torch

from . import driver  # noqa: I100  (first: puts the kit on sys.path from a checkout)
from rcts_adapter_kit import dump
from rcts_adapter_kit.case import Case, rcts_runs
from rcts_adapter_kit.errors import AdapterError
from .mechanisms import CASE_KEYS, unsupported


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rcts_pytorch", description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--rcts-dump", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--style", choices=["reentrant", "non_reentrant"], default="non_reentrant")
    ap.add_argument("--fail-on-skip", action="store_true")
    a = ap.parse_args(argv)
    try:
        return run_case(a)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run_case(a):
    case = Case(a.case)
    out_case = os.path.join(a.out, dump.safe_stem(case.id))

    def skip(why):
        os.makedirs(out_case, exist_ok=True)
        with open(os.path.join(out_case, "SKIPPED"), "w") as f:
            f.write(why + "\n")
        print(f"skip: {case.id}: {why}")
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
    impl = {"name": "pytorch", "version": f"torch {torch.__version__}, checkpoint use_reentrant="
            f"{a.style == 'reentrant'}", "backend": "torch-cpu", "generator": driver.GENERATOR}
    for name, (d, theirs) in runs.items():
        cfg, run_meta = theirs["config"], theirs["run"]
        out = driver.run(cfg, base.params, base.inputs, base.targets, a.style)
        meta = {"case_id": case.id, "case_file": a.case, "run": name, "role": run_meta["role"],
                "of_variant": run_meta.get("of_variant", ""), "rank": theirs.get("rank")}
        dump.write_run(dump.run_dir(a.out, case.id, impl["backend"], name), meta, cfg, out, impl)
    print(f"wrote: {case.id}: {len(runs)} runs ({a.style})")
    return 0


if __name__ == "__main__":
    torch.set_num_threads(1)  # one fixed thread count: the same kernels for every run
    sys.exit(main())
