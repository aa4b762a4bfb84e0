"""The names of a dump's directories (docs/dump-format.md), stdlib only: drivers that run
without torch (scripts/check-megatron) need them too."""
import hashlib
import os
import re
import shutil

MANIFEST = "dump.json"  # a dump directory's manifest, written last
# A case directory holding one of these files instead of runs: the adapter skipped the
# case, or the framework raised (the reason inside, at most MAX_MARKER_BYTES).
SKIPPED, ERRORED = "SKIPPED", "ERRORED"
MAX_MARKER_BYTES = 4096
_UNSAFE = re.compile(rb"[^A-Za-z0-9._-]")


def safe_stem(s):
    """A case id, backend or run as a directory name: the safe file-name rule of
    harness/io/safe_name.hpp (the same examples, tests/support/file_names.json, pin both).
    Every UTF-8 byte outside [A-Za-z0-9._-] becomes _, so do leading dots; a result of more
    than 200 bytes keeps 183 and, after '-', 16 hex digits of the sha256 of s, so two long
    ids never share a directory; an empty name becomes "unnamed"."""
    raw = s.encode("utf-8")
    out = _UNSAFE.sub(b"_", raw).decode("ascii")
    dots = len(out) - len(out.lstrip("."))
    out = "_" * dots + out[dots:]
    if len(out) > 200:
        out = out[:183] + "-" + hashlib.sha256(raw).hexdigest()[:16]
    return out or "unnamed"


def case_dir(root, case_id):
    """A case's directory below a dump root: ROOT/<case> of docs/dump-format.md's
    ROOT/<case>/<backend>/rank<r>/<run>/, where the runs or a SKIPPED / ERRORED marker lie."""
    return os.path.join(root, safe_stem(case_id))


def rank_dir(root, case_id, backend, world_rank=0):
    """The directory of a case's runs at one backend and rank below a dump root."""
    return os.path.join(case_dir(root, case_id), safe_stem(backend), f"rank{world_rank}")


def mark_case(out, case_id, marker, why):
    """Writes `marker` for the case below `out`, replacing whatever the case's directory held
    (runs dumped before a raise are not a result). The reason is cut to what rcts reads."""
    assert marker in (SKIPPED, ERRORED), marker
    d = case_dir(out, case_id)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    text = (why.strip() or "(no message)").encode("utf-8", "replace")[:MAX_MARKER_BYTES - 1]
    with open(os.path.join(d, marker), "wb") as f:
        f.write(text.decode("utf-8", "ignore").encode() + b"\n")
    return d
