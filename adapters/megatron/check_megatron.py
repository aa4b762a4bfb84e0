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
import fnmatch
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "adapters", "kit"))

from rcts_adapter_kit.case import Case, case_files  # noqa: E402
from rcts_adapter_kit.errors import AdapterError  # noqa: E402
from rcts_adapter_kit.layout import SKIPPED, mark_case  # noqa: E402
from rcts_adapter_kit.judge import (check_json_output, dump_name, prepare_out, rcts_check,  # noqa: E402
                                    validate_expectations, write_json_output)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
MARK = ".rcts-check-megatron"  # says a directory was made by this script (F15)


def world_sizes(text):
    """--ranks 1,2 as [1, 2]; anything else is an AdapterError naming the option and value."""
    out = []
    for w in text.split(","):
        if not w.strip().isdigit() or int(w) < 1:
            raise AdapterError(f"--ranks {text}: {w!r} is not a world size (positive integers separated by commas, "
                               f"e.g. 1,2)")
        out.append(int(w))
    return out


RELEASES = os.path.join(HERE, "releases.txt")


def releases():
    """The pinned releases, oldest first; the last is the venv's."""
    with open(RELEASES) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def release_path(release):
    """Where --release RELEASE is imported from: "" (the venv) for the newest pinned release,
    else its pip target; an AdapterError naming the file and value for any other."""
    pinned = releases()
    if release not in pinned:
        raise AdapterError(f"--release {release}: not a release of {RELEASES} ({', '.join(pinned)})")
    if release == pinned[-1]:
        return ""
    path = os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")), "mcore", release)
    if not os.path.isfile(os.path.join(path, "megatron", "core", "__init__.py")):
        raise AdapterError(f"--release {release}: no megatron-core at {path} (scripts/megatron-releases --install)")
    return path


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def world_cmd(world, cmd):
    return cmd if world == 1 else MPIRUN + ["-n", str(world)] + cmd


def one(a, cid, f, world, case):
    """(outcome, failing, details) of one case at one world size where the adapter or rcts
    run decided it (skip, error); None where the world size's rcts check decides."""
    rcts_root = os.path.join(a.out, "rcts", f"{cid}.w{world}")
    out_root = os.path.join(a.out, "megatron", f"w{world}")  # every case at this world size: rcts check --expect judges it
    r = run(world_cmd(world, [a.rcts, "run", f, "--backend", "cpu", "--dump", rcts_root]))
    rcts_case = os.path.join(rcts_root, dump_name(cid))
    if not os.path.isdir(rcts_case):
        skipped = re.search(r"\bSKIP\s.*", r.stdout)
        if skipped:  # no baseline to start from (e.g. a case for a GPU backend): the dumps say so
            why = f"rcts itself skips it here: {skipped.group(0)}"
            mark_case(out_root, cid, SKIPPED, why)
            return "skip", [], [why]
        missing = re.search(r"dumps of [^\[]* are not implemented yet", r.stdout + r.stderr)
        if missing:  # rcts cannot write the baseline this adapter starts from (pipeline parallelism)
            why = f"rcts writes no dump of it: {missing.group(0)}"
            mark_case(out_root, cid, SKIPPED, why)
            return "skip", [], [why]
        return "error", [], [f"rcts run --dump: {(r.stdout + r.stderr).strip()[-300:]}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [a.megatron_path] * bool(a.megatron_path) + [HERE, os.path.join(ROOT, "adapters", "kit")]))
    # megatron-core 0.15 compiles a CUDA extension when imported (inference/unified_memory.py:71,
    # torch's load_inline), and torch asks the GPU for its architecture unless this names one.
    env.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    if a.release:
        env["RCTS_MEGATRON_RELEASE"] = a.release
    ad = run([a.python, "-m", "rcts_megatron", f, "--rcts-dump", rcts_root, "--out", out_root,
              "--world-size", str(world)], env=env)
    if ad.returncode != 0:  # megatron-core raised (its ERRORED marker says so to rcts check), or bad input
        said = [l for l in (ad.stdout + ad.stderr).splitlines() if l.startswith(f"raised: {cid}: ")]
        return "error", [], [said[-1].split(": ", 2)[2] if said else (ad.stdout + ad.stderr).strip()[-400:]]
    if ad.stdout.startswith("skip:"):
        return "skip", [], [ad.stdout.strip().split(": ", 2)[-1]]
    return None


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
    if not os.access(a.rcts, os.X_OK):
        print(f"error: no rcts binary at {a.rcts} (build it, or pass --rcts / set RCTS_BUILD_DIR)", file=sys.stderr)
        return 2
    if not os.access(a.python, os.X_OK):
        print(f"error: no Python at {a.python} (scripts/python-env makes build/venv; or set RCTS_VENV)",
              file=sys.stderr)
        return 2
    try:
        worlds = world_sizes(a.ranks)
        if a.release:
            if a.megatron_path:
                raise AdapterError("--release and --megatron-path both choose the megatron-core to run: give one")
            a.megatron_path = release_path(a.release)
        todo = []
        for f in case_files(a.paths):
            case = Case(f)
            if fnmatch.fnmatchcase(case.id, a.filter):
                todo.extend((case.id, f, w, case.json) for w in worlds if w in case.ranks)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not todo:
        print(f"error: nothing selected from {a.paths} by --filter {a.filter!r} at world sizes {worlds}",
              file=sys.stderr)
        return 2
    try:
        if a.expect:
            validate_expectations(a.rcts, a.expect, todo[0][1])
        check_json_output(a.json)
        prepare_out(a.out, ["rcts", "megatron"], MARK, "scripts/check-megatron")
        return judge_all(a, todo, worlds)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def judge_all(a, todo, worlds):
    results = {}
    for cid, f, w, case in todo:
        decided = one(a, cid, f, w, case)
        print(f"check-megatron: w{w} {cid}: {decided[0] if decided else 'ran'}", file=sys.stderr, flush=True)
        results[(cid, w)] = decided
    ok = True
    for w in worlds:
        files = sorted({f for cid, f, ww, _ in todo if ww == w})
        if not files:
            continue
        dumps = os.path.join(a.out, "megatron", f"w{w}")
        os.makedirs(dumps, exist_ok=True)
        # One rcts check over this world size's dumps: every case's outcome, and with --expect
        # rcts's verdicts (its comparison is the only one).
        j = rcts_check(a.rcts, dumps, os.path.join(a.out, "megatron", f"w{w}.json"), files, a.expect,
                       case_filter=a.filter, launcher=MPIRUN + ["-n", str(w)] if w > 1 else ())
        if a.expect:
            if j.report is None or "expectations" not in j.report:
                raise AdapterError(f"rcts check --expect {a.expect} wrote no report: {j.text.strip()[-400:]}")
            ok &= j.returncode == 0
        for (cid, ww), decided in list(results.items()):
            if ww != w:
                continue
            outcome, failing, details = decided or j.case(cid)[:3]
            res = results[(cid, w)] = {"case": cid, "ranks": w, "outcome": outcome, "failing": failing,
                                       "details": details, "verdict": None}
            if a.expect:
                res["verdict"] = j.case(cid)[3] or "error"
            else:
                res["verdict"] = "pass" if res["outcome"] in ("pass", "skip") else "regression"
                ok &= res["verdict"] == "pass"
            v = res["verdict"]
            mark = "" if v in ("pass", "expected-fail", "expected-skip", "expected-error", "not-applicable", "xfail") else f"   <-- {v}"
            print(f"{res['outcome'].upper():5} w{w} {cid}" + (f"  [{', '.join(res['failing'])}]" if res["failing"] else "") +
                  (f"  ({res['details'][0][:200]})" if res["outcome"] in ("skip", "error") and res["details"] else "")
                  + mark, flush=True)
            if a.details and res["outcome"] == "fail":
                for d in res["details"]:
                    print(f"      {d[:400]}")
        if a.expect:
            print(j.expectations_text())
    counts = {}
    for res in results.values():
        counts[res["verdict"]] = counts.get(res["verdict"], 0) + 1
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if a.json:
        write_json_output(a.json, list(results.values()))
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
