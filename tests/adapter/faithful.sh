#!/usr/bin/env bash
# The adapter's faithful-model claim for one case: rcts dumps its baseline, the adapter
# runs the same block from those parameters and data, rcts_pytorch.compare holds every
# loss, output, input gradient and per-micro-batch parameter gradient to TOLERANCE.
# Usage: faithful.sh RCTS PYTHON CASE TOLERANCE WORKDIR
set -euo pipefail
rcts="$1" py="$2" case="$3" tol="$4" work="$5"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work" && mkdir -p "$work"
"$rcts" run "$case" --dump "$work/rcts" >"$work/rcts.log" 2>&1 || { cat "$work/rcts.log"; exit 2; }
PYTHONPATH="$here/../../adapters/pytorch" exec "$py" -m rcts_pytorch.compare "$case" --rcts-dump "$work/rcts" --tolerance "$tol"
