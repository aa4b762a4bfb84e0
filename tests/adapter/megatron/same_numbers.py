"""Whether two adapter dumps of one case hold the same numbers megatron-core computed, bit
for bit: every tensor file of every run and rank except the dropout masks (an observation,
absent when nothing is recorded), and each micro-batch's loss.

    same_numbers.py DIR_A DIR_B      (each OUT/<case>/megatron-cpu as the adapter wrote it)

Exit 0 when identical, 1 naming the first differences, 2 when a directory holds no run.
"""
import json
import pathlib
import sys


def numbers(root):
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.npy")
             if not p.name.startswith("mask.")}
    for d in root.rglob("dump.json"):
        with open(d) as f:
            mbs = json.load(f)["micro_batches"]
        files[d.relative_to(root).as_posix() + ":losses"] = json.dumps([m["loss"] for m in mbs]).encode()
    return files


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a, b = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    na, nb = numbers(a), numbers(b)
    for d, n in ((a, na), (b, nb)):
        if not any(k.endswith(":losses") for k in n):
            print(f"same_numbers: {d}: no dump.json below it (not an adapter's dump of a case?)", file=sys.stderr)
            return 2
    diff = [f"only in {a}: {k}" for k in sorted(na.keys() - nb.keys())]
    diff += [f"only in {b}: {k}" for k in sorted(nb.keys() - na.keys())]
    diff += [f"differ: {k}" for k in sorted(na.keys() & nb.keys()) if na[k] != nb[k]]
    if diff:
        print(f"same_numbers: {len(diff)} of {len(na)} differ, first: " + "; ".join(diff[:2]))
        return 1
    print(f"same_numbers: {len(na)} tensors and loss lists identical")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
