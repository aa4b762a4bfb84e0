"""Expectation files, format 1 (the shared spec of this session, docs/expectations.md once
issue 24 lands it; `rcts check --expect` reads the same
files): for one implementation at one version, the cases (and checks) expected not to
pass, each with a reason. Read strictly (unknown keys, wrong types, empty reasons,
unknown check kinds, conflicting entries are refused naming the file, JSON path and
value) and compared with a run's outcomes per (case, world size)."""
import fnmatch
import json

from .errors import AdapterError, where

# rcts's check kinds (harness/checks/check_kinds.cpp, plus the result kinds tp_replicas and
# reference that their passes report).
CHECK_KINDS = ("bitwise", "masks", "rng", "memory", "counts", "masks_across_ranks", "tp_replicas", "offload",
               "golden", "config_error", "reference")
ENTRY_KEYS = ("case", "ranks", "outcome", "checks", "reason", "issue")
# How a (case, world size) compares; the first four are as expected.
AS_EXPECTED = ("pass", "expected-fail", "expected-skip")
DIFFERENCES = ("regression", "unexpected-pass", "different-failure", "unexpected-skip", "stale-entry")


class Expectations:
    def __init__(self, path):
        self.file = path
        try:
            with open(path) as f:
                root = json.load(f)
        except OSError as e:
            raise AdapterError(f"expectation file {path}: {e.strerror}") from e
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise AdapterError(f"expectation file {path}: not JSON: {e}") from e

        def fail(p, msg):
            raise AdapterError(where(path, p, msg))

        if not isinstance(root, dict):
            fail("", "an expectation file is a JSON object")
        for k in root:
            if k not in ("format", "version", "implementation", "implementation_version", "entries"):
                fail(f"/{k}", f"unknown key '{k}'")
        if root.get("format") != "rcts-expectations":
            fail("/format", f"{root.get('format')!r}: expected \"rcts-expectations\"")
        if root.get("version") != 1 or isinstance(root.get("version"), bool):
            fail("/version", f"{root.get('version')!r}: this reader reads version 1")
        for k in ("implementation", "implementation_version"):
            if not isinstance(root.get(k), str) or not root[k]:
                fail(f"/{k}", f"{root.get(k)!r}: a non-empty string")
        self.implementation, self.version = root["implementation"], root["implementation_version"]
        entries = root.get("entries")
        if not isinstance(entries, list):
            fail("/entries", f"{entries!r}: an array of entries")
        self.entries = []
        for i, e in enumerate(entries):
            p = f"/entries/{i}"
            if not isinstance(e, dict):
                fail(p, f"{e!r}: an entry is an object")
            for k in e:
                if k not in ENTRY_KEYS:
                    fail(f"{p}/{k}", f"unknown key '{k}' (an entry has {', '.join(ENTRY_KEYS)})")
            if not isinstance(e.get("case"), str) or not e["case"]:
                fail(f"{p}/case", f"{e.get('case')!r}: a case id or glob")
            ranks = e.get("ranks")
            if ranks is not None and not (isinstance(ranks, list) and ranks and all(
                    isinstance(r, int) and not isinstance(r, bool) and r > 0 for r in ranks)):
                fail(f"{p}/ranks", f"{ranks!r}: a non-empty list of world sizes")
            if e.get("outcome") not in ("fail", "skip"):
                fail(f"{p}/outcome", f"{e.get('outcome')!r}: \"fail\" or \"skip\"")
            checks = e.get("checks")
            if e["outcome"] == "fail":
                if not (isinstance(checks, list) and checks):
                    fail(f"{p}/checks", f"{checks!r}: a fail entry lists the checks expected to fail")
            elif checks is not None:
                fail(f"{p}/checks", "a skip entry has no checks")
            for j, c in enumerate(checks or []):
                if c not in CHECK_KINDS:
                    fail(f"{p}/checks/{j}", f"{c!r}: not a check kind ({', '.join(CHECK_KINDS)})")
            if not isinstance(e.get("reason"), str) or not e["reason"].strip():
                fail(f"{p}/reason", f"{e.get('reason')!r}: say why (the cause in the framework, or the rcts rule)")
            if "issue" in e and not isinstance(e["issue"], str):
                fail(f"{p}/issue", f"{e['issue']!r}: a URL")
            self.entries.append(e)

    def entry_for(self, case_id, world_size):
        """(index, entry) of the one entry matching, or None; two matching is a conflict."""
        hits = [(i, e) for i, e in enumerate(self.entries) if fnmatch.fnmatchcase(case_id, e["case"])
                and (e.get("ranks") is None or world_size in e["ranks"])]
        if len(hits) > 1:
            raise AdapterError(where(self.file, "/entries", f"entries {hits[0][0]} and {hits[1][0]} both match case "
                                     f"'{case_id}' at world size {world_size}"))
        return hits[0] if hits else None

    def compare(self, outcomes):
        """outcomes: {(case id, world size): (outcome, sorted failing checks)}, outcome one
        of pass, fail, skip, error. Returns {(case, ws): (verdict, expected)} and the
        stale entries (index, entry) matching no case of the run."""
        verdicts, used = {}, set()
        for (cid, ws), (outcome, failing) in sorted(outcomes.items()):
            hit = self.entry_for(cid, ws)
            want = hit[1] if hit else None
            if hit:
                used.add(hit[0])
            if outcome == "error":
                v = "error"
            elif want is None:
                v = {"pass": "pass", "fail": "regression", "skip": "unexpected-skip"}[outcome]
            elif want["outcome"] == "skip":
                v = {"skip": "expected-skip", "pass": "unexpected-pass", "fail": "regression"}[outcome]
            else:
                v = {"pass": "unexpected-pass", "skip": "unexpected-skip"}.get(outcome) or (
                    "expected-fail" if sorted(want["checks"]) == list(failing) else "different-failure")
            verdicts[(cid, ws)] = (v, want)
        stale = [(i, e) for i, e in enumerate(self.entries) if i not in used]
        return verdicts, stale


def ok(verdicts, stale, strict=False):
    bad = {"regression", "different-failure", "unexpected-skip", "error"}
    if strict:
        bad |= {"unexpected-pass"}
    return not any(v in bad for v, _ in verdicts.values()) and not (strict and stale)
