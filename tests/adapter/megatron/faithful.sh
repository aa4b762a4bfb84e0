#!/usr/bin/env bash
# The Megatron adapter's faithful-model claim for one case (dropout off): rcts dumps the
# case, megatron-core's TransformerBlock runs from those parameters and data, and
# `rcts check --reference-tolerance TOL` holds every loss, output, input gradient and
# parameter gradient to TOL against rcts's reference.
# Usage: faithful.sh RCTS PYTHON CASE TOLERANCE WORKDIR. Exit 0 when it holds, 1 when
# not, 2 when something could not run.
set -uo pipefail
rcts="$1" py="$2" case="$3" tol="$4" work="$5"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PYTHONPATH="$here/../../../adapters/megatron:$here/../../../adapters/kit"
rm -rf "$work" && mkdir -p "$work"
"$rcts" run "$case" --backend cpu --dump "$work/rcts" >"$work/rcts.log" 2>&1 || { cat "$work/rcts.log"; exit 2; }
"$py" -m rcts_megatron "$case" --rcts-dump "$work/rcts" --out "$work/megatron" || exit 2
"$rcts" check "$work/megatron" --cases "$case" --reference-tolerance "$tol" >"$work/check.log" 2>&1
rc=$?
grep -E "^\[|against rcts|(ok  |FAIL) (loss|output|input_grad)" "$work/check.log" | head -12
((rc > 1)) && { cat "$work/check.log"; exit 2; }
exit $rc
