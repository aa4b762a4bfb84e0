"""scripts/check-pytorch: rcts's case set against PyTorch's own checkpointing and offload.

For the selected cases: `rcts run --dump` writes rcts's dumps (the parameters, data and
resolved configs the adapter starts from); the adapter runs every case twice, with
checkpoint(use_reentrant=True) and (use_reentrant=False), and writes format-1 dumps;
`rcts check` judges each set of dumps. Prints one line per case and style and a summary;
with --json writes the outcomes. Exit 0 when every outcome is the expected one
(--expect FILE: {"case id": {"reentrant": OUTCOME, "non_reentrant": OUTCOME}}, OUTCOME
"pass", "skip", or {"outcome": "fail", "failing": [check kinds, exactly]}),
or, without --expect, when nothing errored.
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
STYLES = ("reentrant", "non_reentrant")


def case_files(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(f for f in glob.glob(os.path.join(p, "**", "*.json"), recursive=True)
                          if f"{os.sep}invalid{os.sep}" not in f)
        else:
            out.append(p)
    return out


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def check_outcome(rcts, case_file, dump_root, case_id):
    """(outcome, failing check kinds, detail lines) of `rcts check` over one case's dumps."""
    d = os.path.join(dump_root, re.sub(r"[^A-Za-z0-9._-]", "_", case_id))
    report = os.path.join(dump_root, f"{case_id}.check.json")
    r = run([rcts, "check", d, "--cases", case_file, "--json", report])
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
    details = [k.get("detail", "") for k in c.get("checks", []) if k.get("outcome") == "fail"]
    return c.get("outcome", "error"), failing, details


def main(argv=None):
    ap = argparse.ArgumentParser(prog="check-pytorch", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[os.path.join(ROOT, "cases")])
    ap.add_argument("--rcts", default=os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")),
                                                   "harness", "rcts"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "check-pytorch"))
    ap.add_argument("--filter", default="*", help="glob over case ids")
    ap.add_argument("--expect", help="JSON file of expected outcomes per case and style")
    ap.add_argument("--json", help="write the outcomes here")
    ap.add_argument("--details", action="store_true", help="print each failing check's detail")
    a = ap.parse_args(argv)
    if not os.access(a.rcts, os.X_OK):
        print(f"error: no rcts binary at {a.rcts} (build it, or pass --rcts / set RCTS_BUILD_DIR)", file=sys.stderr)
        return 2
    expect = {}
    if a.expect:
        with open(a.expect) as f:
            expect = json.load(f)
    files = []
    for f in case_files(a.paths):
        with open(f) as fh:
            cid = json.load(fh)["id"]
        if fnmatch.fnmatchcase(cid, a.filter):
            files.append((cid, f))
    if not files:
        print(f"error: no case selected from {a.paths} by --filter {a.filter!r}", file=sys.stderr)
        return 2
    for cid in expect:
        if cid not in {c for c, _ in files}:
            print(f"error: {a.expect}: case '{cid}' is expected but not selected", file=sys.stderr)
            return 2
    shutil.rmtree(a.out, ignore_errors=True)
    rcts_root = os.path.join(a.out, "rcts")
    results, ok = {}, True
    for cid, f in files:
        results[cid] = {}
        r = run([a.rcts, "run", f, "--backend", "cpu", "--dump", os.path.join(rcts_root, cid)])
        for style in STYLES:
            out_root = os.path.join(a.out, f"pytorch-{style}")
            rcts_case = os.path.join(rcts_root, cid)
            skipped = re.search(r"\bSKIP\s.*", r.stdout)
            if skipped and not os.path.isdir(rcts_case):
                outcome, failing, details = "skip", [], [f"rcts itself skips it here: {skipped.group(0)}"]
            elif r.returncode not in (0, 1) or not os.path.isdir(rcts_case):
                outcome, failing, details = "error", [], [f"rcts run --dump: {(r.stdout + r.stderr).strip()[-300:]}"]
            else:
                ad = run([sys.executable, "-m", "rcts_pytorch", f, "--rcts-dump", os.path.join(rcts_root, cid),
                          "--out", out_root, "--style", style], env=dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.path.join(ROOT, "adapters", "kit")))
                if ad.returncode != 0:
                    outcome, failing, details = "error", [], [(ad.stdout + ad.stderr).strip()[-300:]]
                elif ad.stdout.startswith("skip:"):
                    outcome, failing, details = "skip", [], [ad.stdout.strip().split(": ", 2)[-1]]
                else:
                    outcome, failing, details = check_outcome(a.rcts, f, out_root, cid)
            results[cid][style] = {"outcome": outcome, "failing": failing, "details": details}
            want = expect.get(cid, {}).get(style)
            if isinstance(want, str):
                want = {"outcome": want}
            good = (outcome == want["outcome"] and sorted(want.get("failing", failing)) == failing) if want \
                else outcome != "error"
            ok &= good
            mark = "" if good else f"   <-- expected {json.dumps(want)}" if want else "   <-- error"
            print(f"{outcome.upper():5} {style:13} {cid}" + (f"  [{', '.join(failing)}]" if failing else "") +
                  (f"  ({details[0]})" if outcome in ("skip", "error") and details else "") + mark)
            if a.details and outcome == "fail":
                for d in details:
                    print(f"      {d}")
    counts = {}
    for cid in results:
        for style in STYLES:
            o = results[cid][style]["outcome"]
            counts[(style, o)] = counts.get((style, o), 0) + 1
    for style in STYLES:
        print(f"{style:13} " + ", ".join(f"{o} {counts.get((style, o), 0)}" for o in ("pass", "fail", "skip", "error")))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
