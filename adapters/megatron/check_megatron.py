"""scripts/check-megatron: rcts's case set against megatron-core's own recompute and RNG code.

For each selected case and world size (1, and every size in the case's `ranks` with
--multi-rank): `rcts run --dump` (under mpirun for several ranks) writes rcts's dumps,
the adapter (adapters/megatron) runs megatron-core's TransformerBlock on them, and
`rcts check` (under mpirun -n W) judges the adapter's dumps. Prints one line per case
and world size and a summary; with --json writes the outcomes.

Expected outcomes: an expectation file (format 1, /work/wt/EXPECTATIONS_FORMAT.md; e.g.
expectations/megatron-core-0.16.json). Every (case, world size) it does not name must
pass. Exit 0 when there is no regression, different failure or unexpected skip (an
adapter or rcts error counts as a regression); 1 otherwise; 2 on bad input.
"""
import argparse
import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
CHECK_KINDS = {"bitwise", "rng", "masks", "masks_across_ranks", "memory", "counts", "offload", "golden",
               "reference", "config_error"}


def case_files(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(f for f in glob.glob(os.path.join(p, "**", "*.json"), recursive=True)
                          if f"{os.sep}invalid{os.sep}" not in f)
        else:
            out.append(p)
    return out


class Expectations:
    """Format-1 expectation file: entries that say which (case, world size) fail or skip."""

    def __init__(self, path):
        self.path, self.entries = path, []
        if not path:
            return
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise SystemExit(f"error: {path}: {e}")

        def bad(where, msg):
            raise SystemExit(f"error: {path}: {where}: {msg}")

        for k in doc:
            if k not in ("format", "version", "implementation", "implementation_version", "entries"):
                bad(f"/{k}", "unknown key")
        if doc.get("format") != "rcts-expectations" or doc.get("version") != 1:
            bad("/format", "expected format \"rcts-expectations\", version 1")
        for i, e in enumerate(doc.get("entries", [])):
            w = f"/entries/{i}"
            for k in e:
                if k not in ("case", "ranks", "outcome", "checks", "reason", "issue"):
                    bad(f"{w}/{k}", "unknown key")
            if e.get("outcome") not in ("fail", "skip"):
                bad(f"{w}/outcome", f"{e.get('outcome')!r} is not fail or skip")
            if not isinstance(e.get("reason"), str) or not e["reason"].strip():
                bad(f"{w}/reason", "required, non-empty")
            if e["outcome"] == "fail":
                if not e.get("checks"):
                    bad(f"{w}/checks", "a fail entry lists the checks expected to fail")
                for c in e["checks"]:
                    if c not in CHECK_KINDS:
                        bad(f"{w}/checks", f"unknown check kind {c!r}")
            self.entries.append(e)

    def match(self, case_id, world):
        hits = [(i, e) for i, e in enumerate(self.entries)
                if fnmatch.fnmatchcase(case_id, e["case"]) and world in e.get("ranks", [world])]
        if len(hits) > 1:
            raise SystemExit(f"error: {self.path}: entries {hits[0][0]} and {hits[1][0]} both match "
                             f"({case_id}, {world} ranks)")
        return hits[0] if hits else (None, None)

    def judge(self, case_id, world, outcome, failing):
        i, e = self.match(case_id, world)
        if e is None:
            return {"pass": "pass", "skip": "unexpected-skip"}.get(outcome, "regression"), None
        if outcome == "error":
            return "regression", i
        if e["outcome"] == "skip":
            return ("expected-skip" if outcome == "skip" else "unexpected-pass" if outcome == "pass"
                    else "different-failure"), i
        if outcome == "fail":
            return ("expected-fail" if sorted(e["checks"]) == failing else "different-failure"), i
        return ("unexpected-pass" if outcome == "pass" else "unexpected-skip"), i


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def world_cmd(world, cmd):
    return cmd if world == 1 else MPIRUN + ["-n", str(world)] + cmd


def check_outcome(rcts, world, case_file, dump_root, case_id):
    d = os.path.join(dump_root, re.sub(r"[^A-Za-z0-9._-]", "_", case_id))
    report = os.path.join(dump_root, f"{case_id}.check.json")
    r = run(world_cmd(world, [rcts, "check", d, "--cases", case_file, "--json", report]))
    text = r.stdout + r.stderr
    if not os.path.isfile(report):
        return "error", [], [l for l in text.splitlines() if l.strip()][-3:]
    with open(report) as f:
        res = json.load(f)
    cases = [c for c in res.get("cases", []) if c.get("id") == case_id]
    if not cases:
        return "error", [], [f"rcts check reported no result for {case_id}"]
    c = cases[0]
    if c.get("outcome") == "error":
        return "error", [], [c.get("reason", "")]
    failing = sorted({k["kind"] for k in c.get("checks", []) if k.get("outcome") == "fail"})
    details = [f"{k['kind']}: {k.get('detail', '')}" for k in c.get("checks", []) if k.get("outcome") == "fail"]
    return c.get("outcome", "error"), failing, details


def one(a, cid, f, world, case):
    """(outcome, failing, details) of one case at one world size."""
    tag = f"{cid}.w{world}"
    rcts_root = os.path.join(a.out, "rcts", tag)
    out_root = os.path.join(a.out, "megatron", tag)
    r = run(world_cmd(world, [a.rcts, "run", f, "--backend", "cpu", "--dump", rcts_root]))
    rcts_case = os.path.join(rcts_root, re.sub(r"[^A-Za-z0-9._-]", "_", cid))
    if not os.path.isdir(rcts_case):
        skipped = re.search(r"\bSKIP\s.*", r.stdout)
        if skipped:
            return "skip", [], [f"rcts itself skips it here: {skipped.group(0)}"]
        return "error", [], [f"rcts run --dump: {(r.stdout + r.stderr).strip()[-300:]}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [a.megatron_path] * bool(a.megatron_path) + [HERE, os.path.join(ROOT, "adapters", "kit")]))
    ad = run([a.python, "-m", "rcts_megatron", f, "--rcts-dump", rcts_root, "--out", out_root,
              "--world-size", str(world)], env=env)
    if ad.returncode != 0:
        return "error", [], [(ad.stdout + ad.stderr).strip()[-400:]]
    if ad.stdout.startswith("skip:"):
        return "skip", [], [ad.stdout.strip().split(": ", 2)[-1]]
    return check_outcome(a.rcts, world, f, out_root, cid)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="check-megatron", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[os.path.join(ROOT, "cases")])
    ap.add_argument("--rcts", default=os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")),
                                                   "harness", "rcts"))
    ap.add_argument("--python", default=os.path.join(os.environ.get("RCTS_VENV", os.path.join(ROOT, "build", "venv")),
                                                     "bin", "python"))
    ap.add_argument("--megatron-path", default="",
                    help="a Megatron-LM checkout to import instead of the venv's megatron-core")
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
    expect = Expectations(a.expect)
    worlds = [int(w) for w in a.ranks.split(",")]
    todo = []
    for f in case_files(a.paths):
        with open(f) as fh:
            case = json.load(fh)
        if fnmatch.fnmatchcase(case["id"], a.filter):
            for w in worlds:
                if w in case.get("ranks", [1]):
                    todo.append((case["id"], f, w, case))
    if not todo:
        print(f"error: nothing selected from {a.paths} by --filter {a.filter!r} at world sizes {worlds}",
              file=sys.stderr)
        return 2
    shutil.rmtree(a.out, ignore_errors=True)
    results, counts, used = [], {}, set()
    bad_kinds = {"regression", "different-failure", "unexpected-skip"}
    for cid, f, w, case in todo:
        outcome, failing, details = one(a, cid, f, w, case)
        verdict, entry = expect.judge(cid, w, outcome, failing)
        if entry is not None:
            used.add(entry)
        counts[verdict] = counts.get(verdict, 0) + 1
        results.append({"case": cid, "ranks": w, "outcome": outcome, "failing": failing, "details": details,
                        "verdict": verdict})
        mark = "" if verdict not in bad_kinds | {"unexpected-pass"} else f"   <-- {verdict}"
        print(f"{outcome.upper():5} w{w} {cid}" + (f"  [{', '.join(failing)}]" if failing else "") +
              (f"  ({details[0][:200]})" if outcome in ("skip", "error") and details else "") + mark, flush=True)
        if a.details and outcome == "fail":
            for d in details:
                print(f"      {d[:400]}")
    for i, e in enumerate(expect.entries):
        if i not in used and a.filter == "*":
            counts["stale-entry"] = counts.get("stale-entry", 0) + 1
            print(f"note: {a.expect}: entry {i} ({e['case']}) matches no case run here (stale-entry)")
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 1 if any(counts.get(k) for k in bad_kinds) else 0


if __name__ == "__main__":
    sys.exit(main())
