#!/usr/bin/env python3
"""Known answers for the harness's mask oracle, by a second route (pure Python ints).

Philox4x32-10 is written here from Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3" (SC'11) / Random123's philox.h and checked against Random123's own
known-answer vectors before anything is printed. The dropout rule is the one in
docs/decisions.md ("Dropout stream rule"): element i of a draw at block `offset`
reads 32-bit word i % 4 of block offset + i // 4 (key = seed lo, hi; counter = block
lo, hi, 0, 0) and is kept iff (word >> 8) >= floor(p * 2**24 + 1/2), evaluated exactly
with fractions. The printed numbers are pinned in tests/harness/checks/mask_oracle_test.cpp.

Run by hand: python3 tests/harness/checks/mask_kat.py
"""
from fractions import Fraction
import math

M0, M1 = 0xD2511F53, 0xCD9E8D57  # Philox multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments (golden ratio, sqrt(3) - 1)
MASK32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32
    return (c0, c1, c2, c3)


def block(seed, index):
    return philox4x32_10((index & MASK32, index >> 32, 0, 0), (seed & MASK32, seed >> 32))


def threshold(p):
    return math.floor(Fraction(p) * 2**24 + Fraction(1, 2))


def mask(seed, offset, p, n):
    t = threshold(p)
    return [1 if (block(seed, offset + i // 4)[i % 4] >> 8) >= t else 0 for i in range(n)]


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


# Random123 examples/kat_vectors, "philox4x32 10" lines.
KATS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK32,) * 4, (MASK32, MASK32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]

if __name__ == "__main__":
    for ctr, key, want in KATS:
        assert philox4x32_10(ctr, key) == want, (ctr, key)
    print("Random123 KATs ok")
    for seed, index in [(1234, 0), (3952, 7), (0x0123456789ABCDEF, 0xFEDCBA9876543210)]:
        print(f"block({seed:#x}, {index:#x}) =", " ".join(f"{w:#010x}" for w in block(seed, index)))
    for p in [0.1, 0.2, 0.5, 1 / 3, 0.0, 1.0, 2.0**-25, math.nextafter(2.0**-25, 0.0)]:
        print(f"threshold({p!r}) = {threshold(p)}")
    for seed, offset, p, n in [(1234, 0, 0.1, 37), (3952, 11, 0.5, 16), (0xFEEDFACECAFEBEEF, 1 << 40, 0.3, 19)]:
        m = mask(seed, offset, p, n)
        print(f"mask({seed:#x}, {offset}, {p}, {n}) = \"{''.join(map(str, m))}\" fnv1a64 = {fnv1a64(bytes(m)):#018x}")
