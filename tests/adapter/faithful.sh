#!/usr/bin/env bash
# The adapter's faithful-model claim for one case, judged twice: rcts dumps the case,
# the adapter runs the same block from those parameters and data, then
#  1. rcts_pytorch.compare (the adapter's own comparison) and
#  2. rcts check --reference-tolerance over the adapter's dumps (rcts's comparison)
# hold every loss, output, input gradient and parameter gradient to TOLERANCE.
# Usage: faithful.sh RCTS PYTHON CASE TOLERANCE WORKDIR. Exit 0 when both hold, 1 when
# either does not, 2 when something could not run.
set -uo pipefail
rcts="$1" py="$2" case="$3" tol="$4" work="$5"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$here/../../adapters/pytorch"
rm -rf "$work" && mkdir -p "$work"
"$rcts" run "$case" --backend cpu --dump "$work/rcts" >"$work/rcts.log" 2>&1 || { cat "$work/rcts.log"; exit 2; }
"$py" -m rcts_pytorch.compare "$case" --rcts-dump "$work/rcts" --tolerance "$tol"
own=$?
"$py" -m rcts_pytorch "$case" --rcts-dump "$work/rcts" --out "$work/pytorch" || exit 2
"$rcts" check "$work/pytorch" --cases "$case" --reference-tolerance "$tol" >"$work/check.log" 2>&1
theirs=$?
grep -E "PASS|FAIL|ERROR|ok  |FAIL " "$work/check.log" | head -12
((own > 1 || theirs > 1)) && exit 2
((own || theirs)) && exit 1
exit 0
