"""scripts/check-pytorch: rcts's case set against PyTorch's own checkpointing and offload.

For the selected cases: `rcts run --dump` writes rcts's dumps (the parameters, data and
resolved configs the adapter starts from); the adapter runs every case in each mode
(--modes: reentrant, non_reentrant, sac, compile; see docs/pytorch-adapter.md and
docs/frameworks.md) and writes format-1 dumps, every case in one worker process (the kit's
worker.py; --no-worker: one process per case); one `rcts check` per mode judges that
mode's dumps, and each case's outcome is read from its report.
Prints one line per case and mode, what each check judged or why it skipped, and a
summary; with --json writes the outcomes. With --expect FILE (expectation files, format
1: docs/expectations.md; one per mode, named by its "implementation", e.g.
"pytorch-reentrant") `rcts check --expect FILE` judges that mode's dumps (one comparison,
rcts's, for every adapter): exit 0 only when rcts finds every outcome as expected (it
prints the differences: regression, unexpected-pass, different-failure, unexpected-skip,
stale entry); without --expect, exit 0 when nothing errored. Exit 2: bad input.

--out DIR: a new or empty directory, or one an earlier check-pytorch made (it holds
.rcts-check-pytorch); only the parts this script writes are replaced, nothing else in
DIR is ever deleted.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "adapters", "kit"))

from rcts_adapter_kit.case import selected  # noqa: E402
from rcts_adapter_kit.drive import case_lines, run  # noqa: E402
from rcts_adapter_kit.errors import AdapterError  # noqa: E402
from rcts_adapter_kit.judge import (check_json_output, prepare_out as prepare_dir, rcts_check,  # noqa: E402
                                    validate_expectations, write_json_output)
from rcts_adapter_kit.layout import ERRORED, SKIPPED, case_dir, mark_case  # noqa: E402
from rcts_adapter_kit.worker import Worker  # noqa: E402

MODES = ("reentrant", "non_reentrant", "sac", "compile")
DEFAULT_MODES = "reentrant,non_reentrant,sac"
MARK = ".rcts-check-pytorch"  # says a directory was made by this script (F15)


def prepare_out(out, modes):
    """Makes `out` ready without deleting anything this script did not write (F15)."""
    owned = ["rcts"] + [f"pytorch-{m}" for m in MODES] + [f"pytorch-{m}.json" for m in MODES]
    prepare_dir(out, owned, MARK, "scripts/check-pytorch")


def outcome_of(j, case_id):
    """(outcome, failing check kinds, detail lines, per-check summaries) of a case in a report."""
    return (*j.case(case_id)[:3], j.judged(case_id))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="check-pytorch", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[os.path.join(ROOT, "cases")])
    ap.add_argument("--rcts", default=os.path.join(os.environ.get("RCTS_BUILD_DIR", os.path.join(ROOT, "build")),
                                                   "harness", "rcts"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "check-pytorch"))
    ap.add_argument("--filter", default="*", help="glob over case ids")
    ap.add_argument("--modes", default=DEFAULT_MODES, help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--expect", action="append", default=[], help="expectation file (one per mode)")
    ap.add_argument("--expect-strict", action="store_true", help="unexpected passes and stale entries fail too")
    ap.add_argument("--json", help="write the outcomes here")
    ap.add_argument("--details", action="store_true", help="print each failing check's detail")
    ap.add_argument("--no-worker", action="store_true", help="one adapter process per case (imports torch each time)")
    ap.add_argument("--case-timeout", type=float, default=1800,
                    help="seconds a worker may take over one case before it is killed (the case is an error)")
    a = ap.parse_args(argv)
    try:
        return check(a)
    except AdapterError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run_case(a, cid, f, modes, rcts_root, worker, adapter_cmd, env):
    """rcts's dump of one case, then the adapter over it in every mode: per mode the result
    the adapter decided itself (skip, error), or None where rcts check's report decides."""
    rcts_case = os.path.join(rcts_root, cid)
    r = run([a.rcts, "run", f, "--backend", "cpu", "--dump", rcts_case])
    skipped = re.search(r"\bSKIP\s.*", r.stdout)
    pre = None
    if skipped and not os.path.isdir(case_dir(rcts_case, cid)):
        # No baseline to start from (e.g. a case for a GPU backend): the mode dumps say so.
        pre = ("skip", [f"rcts itself skips it here: {skipped.group(0)}"])
        for mode in modes:
            mark_case(os.path.join(a.out, f"pytorch-{mode}"), cid, SKIPPED, pre[1][0])
    elif r.returncode not in (0, 1) or not os.path.isdir(rcts_case):
        pre = ("error", [f"rcts run --dump: {(r.stdout + r.stderr).strip()[-300:]}"])
    adapter = {}
    if pre is None:
        argv = [f, "--rcts-dump", rcts_case, "--out", a.out, "--styles", ",".join(modes)]
        ad, failure = worker.run(argv) if worker else (run(adapter_cmd + argv, env=env), None)
        for line in ad.stdout.splitlines():
            m = re.match(r"^(skip|wrote|error)\[([a-z_]+)\]: (.*)$", line)
            if m:
                adapter[m.group(2)] = (m.group(1), m.group(3))
        answered = all(m in adapter for m in modes)
        if failure and ad.leaked and answered and any(adapter[m][0] == "error" for m in modes):
            # The framework raised mid-run (the adapter's error[mode]) and left its state so, as
            # a per-case process would too: each mode keeps its answer; the next case gets a fresh worker.
            print(f"check-pytorch: {cid}: {failure} (after the error it reported)", file=sys.stderr)
        elif failure:
            # What it dumped is no result: rcts check (and --expect) must see the error too.
            for mode in modes:
                mark_case(os.path.join(a.out, f"pytorch-{mode}"), cid, ERRORED, failure)
            pre = ("error", [failure[:400]])
        elif ad.returncode != 0 and not answered:  # no answer per mode: bad input, or a crash mid-case
            pre = ("error", [(ad.stdout + ad.stderr).strip()[-400:]])
        elif ad.returncode not in (0, 1):  # every mode answered, then the process died (seen after a raise in SAC)
            print(f"check-pytorch: {cid}: the adapter exited {ad.returncode} after answering every mode",
                  file=sys.stderr)
    out = {}
    for mode in modes:
        if pre is not None:
            outcome, details = pre
        elif adapter.get(mode, ("error",))[0] == "skip":
            outcome, details = "skip", [adapter[mode][1].split(": ", 1)[-1]]
        elif adapter.get(mode, ("error",))[0] != "wrote":
            outcome, details = "error", [adapter.get(mode, ("error", "the adapter said nothing"))[1]]
        else:
            out[mode] = None
            continue
        out[mode] = {"outcome": outcome, "failing": [], "details": details, "checks": []}
    return out


def implementation_of(path):
    """The "implementation" an expectation file names (rcts check reads and judges the rest)."""
    try:
        with open(path) as f:
            impl = json.load(f).get("implementation")
    except (OSError, ValueError, AttributeError) as e:
        raise AdapterError(f"expectation file {path}: {e}") from e
    if not isinstance(impl, str):
        raise AdapterError(f"{path}: /implementation: {impl!r}: expected a string such as 'pytorch-reentrant'")
    return impl


def check(a):
    if not os.access(a.rcts, os.X_OK):
        raise AdapterError(f"--rcts {a.rcts}: no rcts binary there (build it, or pass --rcts / set RCTS_BUILD_DIR)")
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES or modes.count(m) > 1:
            raise AdapterError(f"--modes {a.modes}: '{m}' is not one of {', '.join(MODES)} (each once)")
    expect = {}
    for path in a.expect:
        impl = implementation_of(path)
        mode = impl[len("pytorch-"):] if impl.startswith("pytorch-") else None
        if mode not in modes:
            raise AdapterError(f"{path}: /implementation: {impl!r} is not one of the modes run "
                               f"({', '.join('pytorch-' + m for m in modes)})")
        if mode in expect:
            raise AdapterError(f"{path}: /implementation: {impl!r} is also {expect[mode]}'s")
        expect[mode] = path
    files = [(c.id, c.file) for c in selected(a.paths, a.filter)]
    if not files:
        raise AdapterError(f"no case selected from {a.paths} by --filter {a.filter!r}")
    for path in expect.values():
        validate_expectations(a.rcts, path, files[0][1])
    check_json_output(a.json)
    prepare_out(a.out, modes)
    rcts_root = os.path.join(a.out, "rcts")
    results = {}
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.path.join(ROOT, "adapters", "kit"))
    adapter_cmd = [sys.executable, "-m", "rcts_pytorch"]
    worker = None if a.no_worker else Worker(adapter_cmd, env=env, timeout=a.case_timeout)
    try:
        for cid, f in files:
            results[cid] = run_case(a, cid, f, modes, rcts_root, worker, adapter_cmd, env)
    finally:
        if worker:
            worker.close()
            print(f"check-pytorch: {len(files)} cases in {worker.started} adapter process(es)", file=sys.stderr)
    ok = True
    for mode in modes:
        dumps = os.path.join(a.out, f"pytorch-{mode}")
        os.makedirs(dumps, exist_ok=True)
        # One rcts check over the mode's dumps: every case's outcome, and with --expect
        # rcts's verdicts (its comparison is the only one).
        j = rcts_check(a.rcts, dumps, os.path.join(a.out, f"pytorch-{mode}.json"), [f for _, f in files],
                       expect.get(mode), a.expect_strict, a.filter)
        if mode in expect and (j.report is None or "expectations" not in j.report):
            raise AdapterError(f"rcts check --expect {expect[mode]} wrote no report: {j.text.strip()[-400:]}")
        for cid in results:
            res = results[cid][mode]
            if res is None:
                outcome, failing, details, judged = outcome_of(j, cid)
                res = results[cid][mode] = {"outcome": outcome, "failing": failing, "details": details,
                                            "checks": judged}
        if mode in expect:
            verdicts = {cid: j.case(cid)[3] or "error" for cid in results}
            good = j.returncode == 0
            print(j.expectations_text())
        else:
            verdicts = {cid: "pass" if results[cid][mode]["outcome"] != "error" else "error" for cid in results}
            good = all(v != "error" for v in verdicts.values())
        ok &= good
        for cid in results:
            res = results[cid][mode]
            res["verdict"] = verdicts[cid]
            print("\n".join(case_lines(cid, f"{mode:13}", res, a.details)))
    for mode in modes:
        counts = {}
        for cid in results:
            o = results[cid][mode]["outcome"]
            counts[o] = counts.get(o, 0) + 1
        print(f"{mode:13} " + ", ".join(f"{o} {counts.get(o, 0)}" for o in ("pass", "fail", "skip", "error")))
    if a.json:
        write_json_output(a.json, results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
