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
import json
import os
import sys

import torch

from . import dump, driver
from .mechanisms import unsupported


def rcts_runs(root, case_id):
    """Every run rcts dumped for the case at rank 0: {run name: BaselineDump}."""
    d = os.path.join(root, dump.safe_stem(case_id), "cpu", "rank0")  # rcts's reference backend
    if not os.path.isdir(d):
        raise dump.DumpError(f"{d}: no rcts dump of case '{case_id}' (run `rcts run CASE --dump {root}` first)")
    runs = {}
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name, dump.MANIFEST)
        if os.path.isfile(path):
            with open(path) as f:
                m = json.load(f)
            runs[m["run"]["name"]] = (os.path.join(d, name), m["run"])
    if "baseline" not in runs:
        raise dump.DumpError(f"{d}: the rcts dump has no baseline run")
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(prog="rcts_pytorch", description=__doc__.splitlines()[0])
    ap.add_argument("case")
    ap.add_argument("--rcts-dump", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--style", choices=["reentrant", "non_reentrant"], default="non_reentrant")
    ap.add_argument("--fail-on-skip", action="store_true")
    a = ap.parse_args(argv)
    try:
        with open(a.case) as f:
            case = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: case file {a.case}: {e}", file=sys.stderr)
        return 2
    case_id = case.get("id")
    if not isinstance(case_id, str):
        print(f"error: case file {a.case}: /id: missing or not a string", file=sys.stderr)
        return 2
    out_case = os.path.join(a.out, dump.safe_stem(case_id))
    def skip(why):
        os.makedirs(out_case, exist_ok=True)
        with open(os.path.join(out_case, "SKIPPED"), "w") as f:
            f.write(why + "\n")
        print(f"skip: {case_id}: {why}")
        return 3 if a.fail_on_skip else 0

    if "config_error" in case.get("expect", {}):
        return skip("a config_error case runs nothing (rcts judges the config itself)")
    if 1 not in case.get("ranks", [1]):
        return skip(f"the case runs at world sizes {case['ranks']}; the adapter runs one process")
    try:
        runs = rcts_runs(a.rcts_dump, case_id)
        base = dump.BaselineDump(runs["baseline"][0])
        why = None
        for name, (d, _) in runs.items():
            with open(os.path.join(d, dump.MANIFEST)) as f:
                cfg = json.load(f)["config"]
            why = why or unsupported(cfg, case.get("ranks", [1]))
        if why:
            return skip(why)
        impl = {"name": "pytorch", "version": f"torch {torch.__version__}, checkpoint use_reentrant="
                f"{a.style == 'reentrant'}", "backend": "torch-cpu", "generator": driver.GENERATOR}
        for name, (d, run_meta) in runs.items():
            with open(os.path.join(d, dump.MANIFEST)) as f:
                theirs = json.load(f)
            cfg = theirs["config"]
            out = driver.run(cfg, base.params, base.inputs, base.targets, a.style)
            meta = {"case_id": case_id, "case_file": a.case, "run": name, "role": run_meta["role"],
                    "of_variant": run_meta.get("of_variant", ""), "rank": theirs["rank"]}
            dump.write_run(dump.run_dir(a.out, case_id, impl["backend"], name), meta, cfg, out, impl)
        print(f"wrote: {case_id}: {len(runs)} runs ({a.style})")
        return 0
    except dump.DumpError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    torch.set_num_threads(1)  # one fixed thread count: the same kernels for every run
    sys.exit(main())
