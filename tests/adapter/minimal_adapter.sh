#!/usr/bin/env bash
# The complete minimal adapter docs/adapter-contract.md shows (section 7) works as printed:
# the listing is cut out of the page, stays under 150 lines, runs full
# recompute on full.threads.f32 and `rcts check` passes it, judging masks, rng and
# bitwise; the same listing with preserve_rng_state=False (a recompute that redraws its
# dropout) fails; a case it does not model is skipped with the reason.
# Usage: minimal_adapter.sh ROOT RCTS PYTHON WORKDIR
set -uo pipefail
root="$1" rcts="$2" py="$3" work="$4"
rm -rf "$work" && mkdir -p "$work"
export PYTHONPATH="$root/adapters/kit" OMP_NUM_THREADS=1
awk '/^## 7\. The adapter kit/{s=1} s && /^```python$/{on=1; next} on && /^```$/{exit} on' \
  "$root/docs/adapter-contract.md" >"$work/minimal.py"
bad=0
fail() { echo "FAIL $*"; bad=1; }
lines=$(wc -l <"$work/minimal.py")
{ [ "$lines" -gt 20 ] && [ "$lines" -lt 150 ]; } || fail "the listing has $lines lines (want a complete adapter under 150)"
# adapter SCRIPT CASE OUT: rcts dumps the case, the adapter runs it, rcts check judges it.
adapter() {
  rm -rf "$work/rcts" "$3"
  "$rcts" run "$2" --dump "$work/rcts" >/dev/null
  "$py" "$1" "$2" "$work/rcts" "$3"
}
case="$root/cases/full/threads.f32.json"
adapter "$work/minimal.py" "$case" "$work/out" >"$work/adapter.log" 2>&1 || fail "the adapter exited $?: $(tail -3 "$work/adapter.log")"
out="$("$rcts" check "$work/out" --cases "$case" 2>&1)"; rc=$?
[ "$rc" = 0 ] || fail "rcts check of the listing's dumps exited $rc: $(tail -5 <<<"$out")"
for k in masks rng bitwise; do grep -q "^ *$k: judged" <<<"$out" || fail "rcts check judged no $k: $out"; done
sed 's/use_reentrant=True)/use_reentrant=True, preserve_rng_state=False)/' "$work/minimal.py" >"$work/no_rng.py"
cmp -s "$work/minimal.py" "$work/no_rng.py" && fail "the fault found no use_reentrant=True) to change"
adapter "$work/no_rng.py" "$case" "$work/out_fault" >"$work/fault.log" 2>&1 || fail "the fault adapter exited $?"
out="$("$rcts" check "$work/out_fault" --cases "$case" 2>&1)"; rc=$?
[ "$rc" = 1 ] && grep -q "FAIL" <<<"$out" || fail "a recompute without the RNG state passed (exit $rc): $(tail -5 <<<"$out")"
skip="$(adapter "$work/minimal.py" "$root/cases/rng/hidden_dropout_only.json" "$work/out_skip" 2>&1)"
grep -q "^skip: rng.hidden_dropout_only: model.activation_dtype = 'bf16'" <<<"$skip" || fail "no skip with the reason: $skip"
[ $bad = 0 ] && echo "the minimal adapter of docs/adapter-contract.md ($lines lines): passes, its RNG fault fails, a bf16 case is skipped with the reason"
exit $bad
