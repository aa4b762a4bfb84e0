"""What every driver (scripts/check-pytorch, check-megatron, check-deepspeed) does around
its adapter, written once: the world sizes asked for, rcts's baseline dump of a case,
reading what an adapter process decided by itself, one `rcts check` per world size over
the adapter's dumps, a driver's line per case and its summary. Stdlib only: the drivers
run without torch.

An outcome a driver decided without rcts check (a skip, an error) is a triple
(outcome, failing check kinds, details); None means the adapter wrote dumps and rcts
check decides."""
import os
import re
import subprocess
import sys

from .case import selected
from .errors import AdapterError
from .judge import rcts_check, write_json_output
from .layout import SKIPPED, case_dir, mark_case

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
# Verdicts that are no difference from what was expected: a case line marks every other.
AS_EXPECTED = ("pass", "expected-fail", "expected-skip", "expected-error", "not-applicable", "xfail")


def world_sizes(text):
    """--ranks 1,2 as [1, 2]; anything else is an AdapterError naming the option and value."""
    out = []
    for w in text.split(","):
        if not w.strip().isdigit() or int(w) < 1:
            raise AdapterError(f"--ranks {text}: {w!r} is not a world size (positive integers separated by commas, "
                               f"e.g. 1,2)")
        out.append(int(w))
    return out


def at_world_sizes(paths, pattern, worlds):
    """What a driver runs: (case id, case file, world size, case JSON) for every case of
    `paths` whose id the glob `pattern` matches, at each of `worlds` the case lists;
    nothing selected is an AdapterError saying from what."""
    todo = [(c.id, c.file, w, c.json) for c in selected(paths, pattern) for w in worlds if w in c.ranks]
    if not todo:
        raise AdapterError(f"nothing selected from {paths} by --filter {pattern!r} at world sizes {worlds}")
    return todo


def need_tools(rcts, python):
    """Refuses a driver's --rcts or --python that is not an executable, naming how to get one."""
    if not os.access(rcts, os.X_OK):
        raise AdapterError(f"no rcts binary at {rcts} (build it, or pass --rcts / set RCTS_BUILD_DIR)")
    if not os.access(python, os.X_OK):
        raise AdapterError(f"no Python at {python} (scripts/python-env makes build/venv; or set RCTS_VENV)")


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def on_ranks(world, cmd):
    """`cmd` as it runs at `world` ranks: itself for one, under mpirun -n WORLD for more."""
    return cmd if world == 1 else MPIRUN + ["-n", str(world)] + cmd


def rcts_baseline(rcts, case_file, case_id, dump_root, world, out_root):
    """`rcts run CASE --backend cpu --dump DUMP_ROOT` at `world` ranks. None when it dumped
    the case; else the case's outcome: a skip where rcts skips it here (e.g. a case for a GPU
    backend) or writes no dump of it (pipeline parallelism), with the SKIPPED marker below
    `out_root` so that rcts check sees the skip too; an error with what rcts said otherwise."""
    r = run(on_ranks(world, [rcts, "run", case_file, "--backend", "cpu", "--dump", dump_root]))
    if os.path.isdir(case_dir(dump_root, case_id)):
        return None
    skipped = re.search(r"\bSKIP\s.*", r.stdout)
    missing = re.search(r"dumps of [^\[]* are not implemented yet", r.stdout + r.stderr)
    if skipped:
        why = f"rcts itself skips it here: {skipped.group(0)}"
    elif missing:
        why = f"rcts writes no dump of it: {missing.group(0)}"
    else:
        return "error", [], [f"rcts run --dump: {(r.stdout + r.stderr).strip()[-300:]}"]
    mark_case(out_root, case_id, SKIPPED, why)
    return "skip", [], [why]


def adapter_answer(proc, case_id):
    """What an adapter process (`python -m rcts_<adapter> CASE ...`, or a worker's answer)
    decided of a case by itself: an error where it exited non-zero (the reason of its
    `raised: ID: ...` line, else the end of its output), a skip where it printed
    `skip: ID: why`; None where it wrote the case's dumps."""
    if proc.returncode != 0:  # the framework raised (its ERRORED marker says so to rcts check), or bad input
        said = [l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith(f"raised: {case_id}: ")]
        return "error", [], [said[-1].split(": ", 2)[2] if said else (proc.stdout + proc.stderr).strip()[-400:]]
    if proc.stdout.startswith("skip:"):
        return "skip", [], [proc.stdout.strip().split(": ", 2)[-1]]
    return None


def case_lines(case_id, where, res, details=False, cut=(None, None)):
    """A case's lines in a driver's output: `OUTCOME WHERE ID  [failing kinds]  (why it
    skipped or errored)   <-- verdict` (the mark only where the verdict is a difference),
    then what each check judged (res["checks"], where the driver read them) and, with
    `details`, each failing check's detail. `cut`: the most characters of the reason in
    the first line and of each detail (None: all)."""
    reason, detail = cut
    line = f"{res['outcome'].upper():5} {where} {case_id}"
    if res["failing"]:
        line += f"  [{', '.join(res['failing'])}]"
    if res["outcome"] in ("skip", "error") and res["details"]:
        line += f"  ({res['details'][0][:reason]})"
    if res["verdict"] not in AS_EXPECTED:
        line += f"   <-- {res['verdict']}"
    lines = [line] + [f"      {l}" for l in res.get("checks", [])]
    if details and res["outcome"] == "fail":
        lines += [f"      {d[:detail]}" for d in res["details"]]
    return lines


def summary(results):
    """`summary: <verdict> <count>, ...` over a driver's results, verdicts sorted."""
    counts = {}
    for res in results:
        counts[res["verdict"]] = counts.get(res["verdict"], 0) + 1
    return "summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def judge_worlds(todo, worlds, decide, *, tool, rcts, dumps_root, expect=None, case_filter=None, update=False,
                 details=False, json_out=None):
    """Drives a framework over `todo` ((case id, case file, world size, case JSON) each) and
    has rcts judge it: `decide(case_id, file, world, case)` runs rcts and the adapter (the
    adapter's dumps of world size W below DUMPS_ROOT/wW) and returns the outcome where it
    decided one, else None; then one `rcts check` per world size (under mpirun -n W) over
    DUMPS_ROOT/wW (its report: DUMPS_ROOT/wW.json) gives every other outcome and, with
    `expect`, every verdict (rcts's comparison, the only one; `update`: rcts writes
    EXPECT.new). Prints a line per case, rcts's expectation block and a summary; writes
    `json_out`. Returns 0 when rcts found every outcome as expected (with `expect`) or
    nothing failed or errored (without), else 1."""
    results = {}
    for cid, f, w, case in todo:
        decided = decide(cid, f, w, case)
        print(f"{tool}: w{w} {cid}: {decided[0] if decided else 'ran'}", file=sys.stderr, flush=True)
        results[(cid, w)] = decided
    ok = True
    for w in worlds:
        files = sorted({f for cid, f, ww, _ in todo if ww == w})
        if not files:
            continue
        dumps = os.path.join(dumps_root, f"w{w}")
        os.makedirs(dumps, exist_ok=True)
        j = rcts_check(rcts, dumps, dumps + ".json", files, expect, case_filter=case_filter,
                       launcher=MPIRUN + ["-n", str(w)] if w > 1 else (), update=update)
        if expect:
            if j.report is None or "expectations" not in j.report:
                raise AdapterError(f"rcts check --expect {expect} wrote no report: {j.text.strip()[-400:]}")
            ok &= j.returncode == 0
        for (cid, ww), decided in list(results.items()):
            if ww != w:
                continue
            outcome, failing, said = decided or j.case(cid)[:3]
            res = results[(cid, w)] = {"case": cid, "ranks": w, "outcome": outcome, "failing": failing,
                                       "details": said, "verdict": None}
            if expect:
                res["verdict"] = j.case(cid)[3] or "error"
            else:
                res["verdict"] = "pass" if outcome in ("pass", "skip") else "regression"
                ok &= res["verdict"] == "pass"
            print("\n".join(case_lines(cid, f"w{w}", res, details, cut=(200, 400))), flush=True)
        if expect:
            print(j.expectations_text())
    print(summary(results.values()))
    if json_out:
        write_json_output(json_out, list(results.values()))
    return 0 if ok else 1


def pinned_releases(pinned_file):
    """The releases a driver's releases.txt pins, oldest first (one per line; `#` starts a
    comment); the last is the venv's."""
    with open(pinned_file) as f:
        return [l.split("#")[0].strip() for l in f if l.split("#")[0].strip()]


def release_path(release, pinned_file, targets, package_dir, name, install):
    """Where `--release RELEASE` imports the framework from: "" (the venv) for the newest
    pinned release, else its pip target TARGETS/RELEASE (which must hold PACKAGE_DIR, e.g.
    megatron/core); an AdapterError naming the file and value for a release not pinned, and
    INSTALL, the command that makes the target, for one not installed."""
    pinned = pinned_releases(pinned_file)
    if release not in pinned:
        raise AdapterError(f"--release {release}: not a release of {pinned_file} ({', '.join(pinned)})")
    if release == pinned[-1]:
        return ""
    path = os.path.join(targets, release)
    if not os.path.isfile(os.path.join(path, package_dir, "__init__.py")):
        raise AdapterError(f"--release {release}: no {name} at {path} ({install})")
    return path
