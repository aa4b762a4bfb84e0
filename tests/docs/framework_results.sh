#!/usr/bin/env bash
# scripts/framework-results --reuse renders the reports it finds with rcts matrix and
# replaces exactly the text between the page's framework-results markers (the
# framework tables come from rcts matrix), one column per PyTorch mode and per megatron-core
# release. Reports here are rcts's own (two cases at one rank; one case for a release's one-rank
# report), standing in for an adapter's.   Usage: framework_results.sh ROOT RCTS WORKDIR
set -euo pipefail
root="$1" rcts="$2" work="$3"
rm -rf "$work" && mkdir -p "$work/pytorch/report" "$work/megatron/0.16.1/megatron"
"$rcts" run "$root/cases/offload/with_full.json" "$root/cases/rng/attention_dropout_only.json" \
  --json "$work/pytorch/report/pytorch-reentrant.json" >/dev/null
"$rcts" run "$root/cases/rng/hidden_dropout_only.json" --json "$work/megatron/0.16.1/megatron/w1.json" >/dev/null
printf 'before\n<!-- framework-results:begin -->\nold table\n<!-- framework-results:end -->\nafter\n' >"$work/page.md"
RCTS_BUILD_DIR="$(dirname "$(dirname "$rcts")")" "$root/scripts/framework-results" --reuse --work "$work" --page "$work/page.md"
fail() { echo "FAIL $*"; cat "$work/page.md"; exit 1; }
[ "$(head -2 "$work/page.md")" = $'before\n<!-- framework-results:begin -->' ] || fail "the text before the table changed"
[ "$(tail -2 "$work/page.md")" = $'<!-- framework-results:end -->\nafter' ] || fail "the text after the table changed"
grep -q "old table" "$work/page.md" && fail "the old table is still there"
grep -qF '| `offload.with_full` | pass |' "$work/page.md" || fail "no row for offload.with_full"
grep -qF 'pytorch-reentrant' "$work/page.md" || fail "no column named after the report's label"
grep -qF '| case | pytorch-reentrant | megatron-core 0.16.1 |' "$work/page.md" || fail "no column for megatron-core 0.16.1"
grep -qF '| `rng.hidden_dropout_only` | — | pass |' "$work/page.md" || fail "no pass in the release column"
# A page without the markers is refused, untouched.
echo "no markers" >"$work/bare.md"
if RCTS_BUILD_DIR="$(dirname "$(dirname "$rcts")")" "$root/scripts/framework-results" --reuse --work "$work" --page "$work/bare.md" 2>/dev/null; then
  fail "a page without markers was accepted"
fi
[ "$(cat "$work/bare.md")" = "no markers" ] || fail "the page without markers was changed"
echo "framework-results: the table between the markers is rcts matrix's; the rest of the page is kept"
