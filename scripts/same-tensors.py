#!/usr/bin/env python3
"""Whether two `rcts run --dump` directories hold the same tensors, byte for byte.

    scripts/same-tensors.py DIR_A DIR_B

Compares every .npy file (the set of relative paths must be equal, and each file's bytes);
manifests may differ in provenance fields and are not compared. Prints the first
differences and exits 1 when any, 2 on a usage error (a missing or empty directory).
Used by scripts/gpu-check for the fast tier's run == rerun promise.
"""
import pathlib
import sys


def tensors(root):
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*.npy")}


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    ta, tb = tensors(a), tensors(b)
    for d, t in ((a, ta), (b, tb)):
        if not t:
            print(f"same-tensors: {d}: no .npy files (not a dump directory?)", file=sys.stderr)
            return 2
    problems = [f"only in {a}: {k}" for k in sorted(ta.keys() - tb.keys())]
    problems += [f"only in {b}: {k}" for k in sorted(tb.keys() - ta.keys())]
    problems += [f"bytes differ: {k}" for k in sorted(ta.keys() & tb.keys()) if ta[k].read_bytes() != tb[k].read_bytes()]
    if problems:
        print(f"same-tensors: {len(problems)} difference(s) between {a} and {b}:")
        for p in problems[:20]:
            print("  " + p)
        return 1
    print(f"same-tensors: {len(ta)} tensors identical")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
