"""The evidence rule (a check passes only on evidence the framework produced) for the
Megatron adapter: its dense dumps declare side effects not recorded
(megatron-core shows none on this path; the adapter once counted tokens_seen in its own
hooks, a comparison that could never fail) and carry no side_effects of their own. (MoE
dumps carry megatron-core's own aux-loss tracker; none is among the dumps checked here.)
usage: side_effects_not_recorded.py DUMP_ROOT (scripts/check-megatron's --out)"""
import glob
import json
import os
import sys

found = sorted(glob.glob(os.path.join(sys.argv[1], "**", "dump.json"), recursive=True))
bad = []
for f in found:
    with open(f) as fh:
        m = json.load(fh)
    if "side_effects" in m or "side_effects" not in m.get("not_recorded", {}):
        bad.append(f)
print(f"{len(found)} dumps under {sys.argv[1]}; recording side effects: {bad or 'none'}")
sys.exit(1 if bad or not found else 0)
