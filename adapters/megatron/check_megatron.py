"""scripts/check-megatron: rcts's case set against megatron-core's own recompute and RNG code.

For each selected case and world size (1, and every size in the case's `ranks` with
--multi-rank): `rcts run --dump` (under mpirun for several ranks) writes rcts's dumps,
the adapter (adapters/megatron) runs megatron-core's TransformerBlock on them, and one
`rcts check` per world size (under mpirun -n W) judges all its dumps; each case's
outcome is read from that report. Prints one line per case
and world size and a summary; with --json writes the outcomes.

--release R runs megatron-core R of releases.txt (the venv's for the newest, else its pip
target build/mcore/R first on PYTHONPATH; the adapter refuses an import of another version).

Expected outcomes: with --expect FILE (format 1, docs/expectations.md; e.g.
expectations/megatron-core-0.16.1.json) `rcts check --expect FILE` judges each world size's
dumps (one comparison, rcts's, for every adapter): exit 0 when rcts finds every outcome
as expected, 1 otherwise (an adapter or rcts error is a difference); without --expect,
exit 0 when nothing failed or errored. Exit 2 on bad input.

--out DIR: a new or empty directory, or one an earlier check-megatron made (it holds
.rcts-check-megatron); only rcts/ and megatron/ in it are replaced.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "adapters", "kit"))

from rcts_adapter_kit import drive  # noqa: E402
from rcts_adapter_kit.drive import (adapter_answer, at_world_sizes, judge_worlds, need_tools,  # noqa: E402
                                    rcts_baseline, run, world_sizes)
from rcts_adapter_kit.errors import AdapterError  # noqa: E402
from rcts_adapter_kit.judge import check_json_output, prepare_out, validate_expectations  # noqa: E402
MARK = ".rcts-check-megatron"  # says a directory was made by this script (F15)
RELEASES = os.path.join(HERE, "releases.txt")


def releases():
    """The pinned releases, oldest first; the last is the venv's."""
    return drive.pinned_releases(RELEASES)


def release_path(release):
    """Where --release RELEASE is imported from (the kit's rule): "" for the venv's, else build/mcore/RELEASE."""
    targets = os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")), "mcore")
    return drive.release_path(release, RELEASES, targets, os.path.join("megatron", "core"), "megatron-core",
                              "scripts/megatron-releases --install")


def one(a, cid, f, world, case):
    """(outcome, failing, details) of one case at one world size where the adapter or rcts
    run decided it (skip, error); None where the world size's rcts check decides."""
    rcts_root = os.path.join(a.out, "rcts", f"{cid}.w{world}")
    out_root = os.path.join(a.out, "megatron", f"w{world}")  # every case at this world size: rcts check --expect judges it
    decided = rcts_baseline(a.rcts, f, cid, rcts_root, world, out_root)
    if decided:
        return decided
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [a.megatron_path] * bool(a.megatron_path) + [HERE, os.path.join(ROOT, "adapters", "kit")]))
    # megatron-core 0.15 compiles a CUDA extension when imported (inference/unified_memory.py:71,
    # torch's load_inline), and torch asks the GPU for its architecture unless this names one.
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    if a.release:
        env["RCTS_MEGATRON_RELEASE"] = a.release
    return adapter_answer(run([a.python, "-m", "rcts_megatron", f, "--rcts-dump", rcts_root, "--out", out_root,
                               "--world-size", str(world)], env=env), cid)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="check-megatron", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[os.path.join(ROOT, "cases")])
    ap.add_argument("--rcts", default=os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")),
                                                   "harness", "rcts"))
    ap.add_argument("--python", default=os.path.join(os.environ.get("RCTS_VENV", os.path.join(ROOT, "build", "venv")),
                                                     "bin", "python"))
    ap.add_argument("--megatron-path", default="",
                    help="a Megatron-LM checkout to import instead of the venv's megatron-core")
    ap.add_argument("--release", default="",
                    help="a megatron-core release of adapters/megatron/releases.txt: the venv's for the newest, else "
                         "the pip target build/mcore/<release> (scripts/megatron-releases --install makes it)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "check-megatron"))
    ap.add_argument("--filter", default="*", help="glob over case ids")
    ap.add_argument("--ranks", default="1", help="world sizes to run, e.g. 1,2 (each where the case lists it)")
    ap.add_argument("--expect", help="expectation file (format 1)")
    ap.add_argument("--json", help="write the outcomes here")
    ap.add_argument("--details", action="store_true", help="print each failing check's detail")
    a = ap.parse_args(argv)
    try:
        need_tools(a.rcts, a.python)
        worlds = world_sizes(a.ranks)
        if a.release:
            if a.megatron_path:
                raise AdapterError("--release and --megatron-path both choose the megatron-core to run: give one")
            a.megatron_path = release_path(a.release)
        todo = at_world_sizes(a.paths, a.filter, worlds)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if a.expect:
            validate_expectations(a.rcts, a.expect, todo[0][1])
        check_json_output(a.json)
        prepare_out(a.out, ["rcts", "megatron"], MARK, "scripts/check-megatron")
        return judge_worlds(todo, worlds, lambda *c: one(a, *c), tool="check-megatron", rcts=a.rcts,
                            dumps_root=os.path.join(a.out, "megatron"), expect=a.expect, case_filter=a.filter,
                            details=a.details, json_out=a.json)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
