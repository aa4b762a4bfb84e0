"""scripts/check-deepspeed: rcts's case set against DeepSpeed's activation checkpointing.

For each selected case and world size (--ranks; each where the case lists it): `rcts run
--dump` (under mpirun for several ranks) writes rcts's dumps, the adapter
(adapters/deepspeed) runs the shared block under DeepSpeed's checkpoint in one --mode
(mechanisms.py: plain, partition, cpu, contiguous, non_reentrant), and one `rcts check` per world size
(under mpirun -n W) judges all its dumps; each case's outcome is read from that report.
Prints one line per case and world size and a summary; with --json writes the outcomes.

--release R runs deepspeed R of releases.txt: the venv's for the newest, else its pip
target DSREL/R first on PYTHONPATH (DSREL: $RCTS_DSREL_DIR, default $RCTS_BUILD_DIR/dsrel or
build/dsrel; scripts/deepspeed-releases --install makes them); the adapter refuses an
import of another version. --shim S bridges a gap of an older release (rcts_deepspeed/
releases.py; named in every dump's implementation string).

Expected outcomes: with --expect FILE (format 1, docs/expectations.md; e.g.
expectations/deepspeed-0.19.8-plain.json) `rcts check --expect FILE` judges each world
size's dumps (one comparison, rcts's): exit 0 when rcts finds every outcome as expected,
1 otherwise; without --expect, exit 0 when nothing failed or errored. With
--update-expectations rcts also writes FILE.new (docs/expectations.md,
`--update-expectations`). Exit 2 on bad input.

--out DIR: a new or empty directory, or one an earlier check-deepspeed made (it holds
.rcts-check-deepspeed); only rcts/ and deepspeed-<mode>/ in it are replaced.
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
from rcts_adapter_kit.layout import ERRORED, mark_case  # noqa: E402
from rcts_adapter_kit.worker import Worker  # noqa: E402
from rcts_adapter_kit.judge import check_json_output, prepare_out, validate_expectations  # noqa: E402
MODES = ("plain", "partition", "cpu", "contiguous", "non_reentrant")  # rcts_deepspeed.mechanisms.MODES (no torch imported here)
MARK = ".rcts-check-deepspeed"  # says a directory was made by this script (F15)
RELEASES = os.path.join(HERE, "releases.txt")
SHIM_NAMES = ("cpu_stream",)  # rcts_deepspeed.releases.SHIMS (no torch imported here)


def dsrel_dir():
    return os.environ.get("RCTS_DSREL_DIR") or os.path.join(
        os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")), "dsrel")


def releases():
    """The pinned releases, oldest first; the last is the venv's."""
    return drive.pinned_releases(RELEASES)


def release_path(release):
    """Where --release RELEASE is imported from (the kit's rule): "" for the venv's, else its pip target."""
    return drive.release_path(release, RELEASES, dsrel_dir(), "deepspeed", "deepspeed", "scripts/deepspeed-releases --install")


def one(a, cid, f, world, case):
    """(outcome, failing, details) of one case at one world size where the adapter or rcts
    run decided it (skip, error); None where the world size's rcts check decides."""
    rcts_root = os.path.join(a.out, "rcts", f"{cid}.w{world}")
    out_root = os.path.join(a.out, f"deepspeed-{a.mode}", f"w{world}")  # every case at this world size: rcts check --expect judges it
    decided = rcts_baseline(a.rcts, f, cid, rcts_root, world, out_root)
    if decided:
        return decided
    argv = [f, "--rcts-dump", rcts_root, "--out", out_root, "--world-size", str(world), "--mode", a.mode]
    if world == 1 and a.worker is not None:  # one process serves every one-rank case (imports once)
        ad, failure = a.worker.run(argv)
        if failure:  # what it dumped is no result: rcts check (and --expect) must see the error too
            mark_case(out_root, cid, ERRORED, failure)
            return "error", [], [failure[:400]]
    else:
        ad = run([a.python, "-m", "rcts_deepspeed"] + argv, env=adapter_env(a))
    return adapter_answer(ad, cid)


def adapter_env(a):
    env = dict(os.environ, DS_ACCELERATOR="cpu", PYTHONPATH=os.pathsep.join(
        [a.deepspeed_path] * bool(a.deepspeed_path) +
        [HERE, os.path.join(ROOT, "adapters", "pytorch"), os.path.join(ROOT, "adapters", "kit")]))
    env.pop("RCTS_DEEPSPEED_RELEASE", None)
    env.pop("RCTS_DEEPSPEED_SHIMS", None)
    if a.release:
        env["RCTS_DEEPSPEED_RELEASE"] = a.release
    if a.shim:
        env["RCTS_DEEPSPEED_SHIMS"] = ",".join(sorted(set(a.shim)))
    return env


def main(argv=None):
    ap = argparse.ArgumentParser(prog="check-deepspeed", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[os.path.join(ROOT, "cases")])
    ap.add_argument("--rcts", default=os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")),
                                                   "harness", "rcts"))
    ap.add_argument("--python", default=os.path.join(os.environ.get("RCTS_VENV", os.path.join(ROOT, "build", "venv")),
                                                     "bin", "python"))
    ap.add_argument("--release", default="",
                    help="a deepspeed release of adapters/deepspeed/releases.txt: the venv's for the newest, else the "
                         "pip target DSREL/<release> (scripts/deepspeed-releases --install makes it)")
    ap.add_argument("--shim", action="append", choices=SHIM_NAMES, default=[],
                    help="a bridge for an older release's gap (rcts_deepspeed/releases.py), repeatable")
    ap.add_argument("--mode", choices=MODES, default="plain", help="DeepSpeed's checkpointing knobs (mechanisms.py)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "check-deepspeed"))
    ap.add_argument("--filter", default="*", help="glob over case ids")
    ap.add_argument("--ranks", default="1", help="world sizes to run, e.g. 1,2 (each where the case lists it)")
    ap.add_argument("--expect", help="expectation file (format 1)")
    ap.add_argument("--update-expectations", action="store_true", help="rcts writes the proposal to EXPECT.new")
    ap.add_argument("--json", help="write the outcomes here")
    ap.add_argument("--details", action="store_true", help="print each failing check's detail")
    ap.add_argument("--no-worker", action="store_true", help="one adapter process per one-rank case")
    ap.add_argument("--case-timeout", type=float, default=1800, help="seconds the worker may take over one case")
    a = ap.parse_args(argv)
    try:
        need_tools(a.rcts, a.python)
        worlds = world_sizes(a.ranks)
        a.deepspeed_path = release_path(a.release) if a.release else ""
        if a.update_expectations and (len(worlds) > 1 or not a.expect):
            raise AdapterError(f"--update-expectations needs --expect and one world size (each rcts check writes "
                               f"EXPECT.new), not --ranks {a.ranks}")
        todo = at_world_sizes(a.paths, a.filter, worlds)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if a.expect:
            validate_expectations(a.rcts, a.expect, todo[0][1])
        check_json_output(a.json)
        prepare_out(a.out, ["rcts"] + [f"deepspeed-{m}" for m in MODES], MARK, "scripts/check-deepspeed")
        a.worker = None if a.no_worker else Worker([a.python, "-m", "rcts_deepspeed"], env=adapter_env(a),
                                                   timeout=a.case_timeout)
        try:
            return judge_worlds(todo, worlds, lambda *c: one(a, *c), tool="check-deepspeed", rcts=a.rcts,
                                dumps_root=os.path.join(a.out, f"deepspeed-{a.mode}"), expect=a.expect,
                                case_filter=a.filter, update=a.update_expectations, details=a.details,
                                json_out=a.json)
        finally:
            if a.worker:
                a.worker.close()
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
