"""Finding case files, reading one and the rcts dumps of its runs, strictly: what is
missing or of the wrong type is an AdapterError naming the file, the JSON path and the
value. Stdlib only: the drivers (scripts/check-megatron) run without torch."""
import fnmatch
import glob
import json
import os

from .errors import AdapterError, DumpError, where
from .json_value import Json, read_json
from .layout import MANIFEST, rank_dir


def case_files(paths):
    """The case files a driver's arguments name: a file as given, a directory's *.json
    below it (sorted; cases/invalid/ holds refused configs, not cases to run). A path
    that is neither is an AdapterError."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(f for f in glob.glob(os.path.join(p, "**", "*.json"), recursive=True)
                          if f"{os.sep}invalid{os.sep}" not in f)
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise AdapterError(f"{p}: no such case file or directory")
    return out


def selected(paths, pattern="*"):
    """The cases of `case_files(paths)` whose id the glob `pattern` matches (a driver's
    --filter), each read strictly as a Case, in order."""
    return [c for c in map(Case, case_files(paths)) if fnmatch.fnmatchcase(c.id, pattern)]


# The keys of a case file (harness/cases/case.cpp); another key is an error, as in rcts.
CASE_KEYS = ("id", "description", "ranks", "backends", "config", "seed_ranks", "variants", "expect", "xfail")


class Case:
    """The parts of a case file an adapter reads: id, world sizes, expectations. A key
    rcts does not know is an error (exit 2); `unmodelled(keys)` says which known keys,
    present in this case, the adapter does not model (its reason to skip)."""

    def __init__(self, path):
        self.file = path
        root = Json(path, read_json(path, "case file"))
        if not isinstance(root.value, dict):
            root.fail(f"a case is a JSON object, not {type(root.value).__name__}")
        for k in root.value:
            if k not in CASE_KEYS:
                root.fail(f"unknown key '{k}' (a case has {', '.join(CASE_KEYS)})")
        self.json = root.value
        self.id = root["id"].string()
        ranks = root.value.get("ranks", [1])
        if not (isinstance(ranks, list) and ranks and all(isinstance(r, int) and not isinstance(r, bool) and r > 0
                                                          for r in ranks)):
            raise AdapterError(where(path, "/ranks", f"{ranks!r} is not a non-empty list of positive integers"))
        self.ranks = ranks
        expect = root.value.get("expect", {})
        if not isinstance(expect, dict):
            raise AdapterError(where(path, "/expect", f"{expect!r} is not an object"))
        self.expect = expect

    def unmodelled(self, modelled):
        """The first key of this case outside `modelled` (with its value), or None."""
        for k in CASE_KEYS:
            if k in self.json and k not in modelled:
                return f"case key {k} (= {json.dumps(self.json[k])}) is not modelled by the adapter"
        return None


def rcts_runs(root, case_id, backend="cpu", world_rank=0):
    """Every run rcts dumped for the case at one rank: {run name: (directory, manifest)}."""
    d = rank_dir(root, case_id, backend, world_rank)
    if not os.path.isdir(d):
        raise DumpError(f"{d}: no rcts dump of case '{case_id}' (run `rcts run CASE --dump {root}` first)")
    runs = {}
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name, MANIFEST)
        if os.path.islink(path):  # as rcts refuses one: it could name any file
            raise DumpError(f"{path}: a dump manifest may not be a symbolic link")
        if os.path.isfile(path):
            m = Json(path, read_json(path, "rcts dump manifest"))
            run = m["run"]
            runs[run["name"].string()] = (os.path.join(d, name), m.value)
            m["config"].object()
            run["role"].string()
    if "baseline" not in runs:
        raise DumpError(f"{d}: the rcts dump has no baseline run")
    return runs
