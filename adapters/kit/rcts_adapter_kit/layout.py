"""The names of a dump's directories (docs/dump-format.md), stdlib only: drivers that run
without torch (scripts/check-megatron) need them too."""
import re

_UNSAFE = re.compile(rb"[^A-Za-z0-9._-]")


def safe_stem(s):
    """A case id, backend or run as a directory name: the safe file-name rule of
    harness/io/safe_name.hpp (the same examples, tests/support/file_names.json, pin both).
    Every UTF-8 byte outside [A-Za-z0-9._-] becomes _, so do leading dots; at most 200
    bytes are kept; an empty name becomes "unnamed"."""
    out = _UNSAFE.sub(b"_", s.encode("utf-8")[:200]).decode("ascii")
    dots = len(out) - len(out.lstrip("."))
    out = "_" * dots + out[dots:]
    return out or "unnamed"
