"""The names of a dump's directories (docs/dump-format.md), stdlib only: drivers that run
without torch (scripts/check-megatron) need them too."""
import re


def safe_stem(s):
    """A case id, backend or run as a directory name: characters outside [A-Za-z0-9._-] as _."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", s)[:200]
