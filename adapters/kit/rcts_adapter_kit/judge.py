"""Judging an adapter's dumps is rcts's job, never the adapter's: `rcts check` replays the
checks over the dumps, and with `--expect FILE` compares the outcomes with an expectation
file (docs/expectations.md). A driver script (scripts/check-pytorch, scripts/check-megatron)
uses these helpers so that there is one comparison, rcts's, for every adapter.

Also the one rule for a driver's output directory: it writes only into a
new or empty directory, or one it made before (it holds the driver's mark file), and
replaces only the subdirectories it owns; nothing else in it is ever deleted."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from .errors import AdapterError


def check_json_output(path):
    """Refuses a --json path that could not be written, before a long run rather than after."""
    if not path:
        return
    where = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(where) or not os.access(where, os.W_OK):
        raise AdapterError(f"--json {path}: " + ("a directory" if os.path.isdir(path) else
                                                 f"cannot write into {where} (no such directory, or not writable)"))


def write_json_output(path, value):
    """Writes a driver's --json; a failed write is an AdapterError naming the file."""
    try:
        with open(path, "w") as fh:
            json.dump(value, fh, indent=1)
    except OSError as e:
        raise AdapterError(f"--json {path}: {e.strerror}") from e


def prepare_out(out, owned, mark, tool):
    """Makes `out` ready for `tool`, removing only its `owned` subdirectories (F15)."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise AdapterError(f"--out {out}: exists and is not a directory")
    if os.path.isdir(out) and os.listdir(out) and not os.path.isfile(os.path.join(out, mark)):
        raise AdapterError(f"--out {out}: a non-empty directory {tool} did not make (no {mark}); "
                           "give a new or empty directory: nothing in it is deleted")
    try:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, mark), "w") as f:
            f.write(f"made by {tool}; it replaces only {', '.join(s + '/' for s in owned)} here\n")
    except OSError as e:
        raise AdapterError(f"--out {out}: cannot make it: {e.strerror}") from e
    for sub in owned:
        p = os.path.join(out, sub)
        if os.path.islink(p) or os.path.isfile(p):
            os.unlink(p)
        elif os.path.isdir(p):
            shutil.rmtree(p)


class Judgement:
    """What one `rcts check` said: its exit status, its text, its JSON report (or None)."""

    def __init__(self, returncode, text, report):
        self.returncode, self.text, self.report = returncode, text, report

    def case(self, case_id):
        """(outcome, failing check kinds, failure details, expectation verdict or None) of a case."""
        if self.report is None:
            lines = [l for l in self.text.splitlines() if l.strip()][-3:]
            return "error", [], lines or [f"rcts check exited {self.returncode} without a report"], None
        hits = [c for c in self.report.get("cases", []) if c.get("id") == case_id]
        if not hits:
            return "error", [], [f"rcts check reported no result for {case_id}"], None
        c = hits[0]
        verdict = (c.get("expectation") or {}).get("verdict")
        if c.get("outcome") == "error":
            return "error", [], [c.get("reason", "")], verdict
        checks = c.get("checks", [])
        failing = sorted({k["kind"] for k in checks if k.get("outcome") == "fail"})
        details = [f"{k['kind']}: {k.get('detail', '')}" for k in checks if k.get("outcome") == "fail"]
        if c.get("outcome") == "skip" and c.get("reason"):
            details = [c["reason"]]
        return c.get("outcome", "error"), failing, details, verdict

    def judged(self, case_id=None):
        """rcts check's per-check lines (`        <kind>: judged ...` / `: skip ...`), stripped:
        of every case, or only those under `case_id`'s progress line."""
        lines, mine = [], case_id is None
        for l in self.text.splitlines():
            head = _PROGRESS.match(l)
            if head:
                mine = case_id is None or head.group(1) == case_id
            elif mine and _JUDGED.match(l):
                lines.append(l.strip())
        return lines

    def expectations_text(self):
        """rcts check's expectation block (from its `expectations  FILE ...` line on)."""
        lines = self.text.splitlines()
        start = next((i for i, l in enumerate(lines) if l.startswith("expectations  ")), None)
        return "\n".join(lines[start:]) if start is not None else ""


# A check's line in rcts check's text report: what it judged, or why it skipped.
_JUDGED = re.compile(r"^\s{8}[a-z_]+: (judged|skip)")
# A case's progress line, `[3/7] PASS <id> [<backend>] (0.12 s)...` (harness/reports/report.cpp).
_PROGRESS = re.compile(r"^\[\s*\d+/\d+\] [A-Z]+ (\S+)(?: \[[^\]]*\])? \(")


def validate_expectations(rcts, path, case_file):
    """Refuses a bad expectation file before anything runs: rcts reads it (over an empty dump
    directory) and exit 2 is its refusal, naming the file, JSON path and value."""
    if not os.path.isfile(path):
        raise AdapterError(f"--expect {path}: " + ("a directory, not an expectation file" if os.path.isdir(path)
                                                   else "no such expectation file"))
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "dumps"))
        rcts_check(rcts, os.path.join(d, "dumps"), os.path.join(d, "r.json"), [case_file], expect=path)


def rcts_check(rcts, dumps, json_path, case_files=(), expect=None, strict=False, case_filter=None, launcher=(),
               update=False):
    """Runs `[launcher] rcts check DUMPS --json JSON_PATH [--cases ...] [--expect FILE [--expect-strict]
    [--update-expectations]]` (update: rcts writes FILE.new, docs/expectations.md).
    Exit 2 from rcts (a refused expectation file, bad usage) is bad input: AdapterError."""
    cmd = [*launcher, rcts, "check", dumps, "--json", json_path]
    if case_files:
        cmd += ["--cases", *case_files]
    if case_filter and case_filter != "*":
        cmd += ["--filter", case_filter]
    if expect:
        cmd += ["--expect", expect] + (["--expect-strict"] if strict else []) + (["--update-expectations"] * update)
    if os.path.exists(json_path):
        os.unlink(json_path)
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = r.stdout + r.stderr
    if r.returncode == 2 and expect:
        raise AdapterError(f"rcts check --expect {expect}: " + "; ".join(l for l in text.splitlines()[-3:] if l.strip()))
    report = None
    if os.path.isfile(json_path):
        with open(json_path) as f:
            report = json.load(f)
    return Judgement(r.returncode, text, report)
