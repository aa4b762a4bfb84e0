"""One results-matrix column of a megatron-core release: its `rcts check --json` reports at
one and two ranks as one report (scripts/framework-results).

    one_column.py W1.json [W2.json] > BOTH.json

No case of the set runs at both one and two ranks (cases/*: `ranks`), so each case keeps
the entry of the world size it runs at; the other report's "needs N ranks, this check has
W" skip of it is dropped. A case that has a real entry in both reports is refused (exit 2),
as is a missing or unreadable first report; a missing second report leaves the first.
"""
import json
import os
import re
import sys

NOT_HERE = re.compile(r"needs [0-9, ]+ ranks, this check has [0-9]+")


def merge(first, second):
    out, by_id = dict(first), {}
    for rep in (first, second):
        for c in rep["cases"] if rep else ():
            key = c["id"]
            other = by_id.get(key)
            if other is None or NOT_HERE.fullmatch(other.get("reason", "")):
                by_id[key] = c
            elif not NOT_HERE.fullmatch(c.get("reason", "")):
                raise ValueError(f"case {c['id']} has a result at both world sizes")
    out["cases"] = list(by_id.values())
    return out


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        with open(argv[1]) as f:
            first = json.load(f)
        second = None
        if len(argv) == 3 and os.path.isfile(argv[2]):
            with open(argv[2]) as f:
                second = json.load(f)
        json.dump(merge(first, second), sys.stdout, indent=1)
    except (OSError, ValueError, KeyError) as e:
        print(f"one_column: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
