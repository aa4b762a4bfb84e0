"""The names of a dump's directories (docs/dump-format.md), stdlib only: drivers that run
without torch (scripts/check-megatron) need them too."""
import hashlib
import re


def safe_stem(s):
    """A case id, backend or run as a directory name: characters outside [A-Za-z0-9._-] as _;
    a name of more than 200 characters keeps 183 and, after '-', 16 hex digits of the sha256
    of s, so two long ids never share a directory (rcts's case_dir_name: the same rule)."""
    out = re.sub(r"[^A-Za-z0-9._-]", "_", s)
    if len(out) > 200:
        out = out[:183] + "-" + hashlib.sha256(s.encode()).hexdigest()[:16]
    return out
