#!/usr/bin/env bash
# scripts/check-pytorch (and check-megatron) never deletes what it did not make (--out),
# and bad input to the adapter or to check-pytorch is exit 2 with a message naming the
# file and the field, never a traceback.
# Usage: hostile_input.sh ROOT RCTS PYTHON WORKDIR. Exit 0 when every refusal is right.
set -uo pipefail
root="$1" rcts="$2" py="$3" work="$4"
export PYTHONPATH="$root/adapters/pytorch:$root/adapters/kit" RCTS_PYTHON="$py"
rm -rf "$work" && mkdir -p "$work"
bad=0
# expect RC PATTERN... -- COMMAND...: the command exits RC, prints every PATTERN, no traceback
expect() {
  local rc="$1"; shift
  local pats=()
  while [ "$1" != "--" ]; do pats+=("$1"); shift; done
  shift
  local out got
  out="$("$@" 2>&1)"; got=$?
  local ok=1
  [ "$got" = "$rc" ] || ok=0
  case "$out" in *Traceback*) ok=0 ;; esac
  for p in "${pats[@]}"; do grep -qF -- "$p" <<<"$out" || ok=0; done
  if [ $ok = 1 ]; then echo "ok   exit $got: ${pats[*]}"; else echo "FAIL exit $got (want $rc, ${pats[*]}): $*"; echo "$out" | tail -5; bad=1; fi
}
case_ok="$root/cases/rng/attention_dropout_only.json"

# F15: a directory check-pytorch did not make is refused, its files untouched.
mkdir -p "$work/user" && echo keep > "$work/user/precious"
expect 2 "--out $work/user" "did not make" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --out "$work/user"
[ -f "$work/user/precious" ] || { echo "FAIL --out deleted $work/user/precious"; bad=1; }
echo x > "$work/file"
expect 2 "--out $work/file" "not a directory" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --out "$work/file"
# scripts/check-megatron keeps the same rule (the kit's prepare_out; it once removed --out whole).
expect 2 "--out $work/user" "did not make" -- "$root/scripts/check-megatron" "$case_ok" --rcts "$rcts" --python "$py" --out "$work/user"
[ -f "$work/user/precious" ] || { echo "FAIL check-megatron --out deleted $work/user/precious"; bad=1; }
# One it made: only its own parts are replaced; a file a person put there stays.
mkdir -p "$work/made/rcts/old" && touch "$work/made/.rcts-check-pytorch" && echo keep > "$work/made/notes.txt"
"$root/scripts/check-pytorch" "$root/cases/invalid/fp8.recipe.json" --rcts "$rcts" --modes reentrant --out "$work/made" >/dev/null 2>&1
[ -f "$work/made/notes.txt" ] && [ ! -d "$work/made/rcts/old" ] || { echo "FAIL a made --out: notes.txt lost or rcts/old kept"; bad=1; }

# F16: the adapter.
printf '{"id": "a", ' > "$work/notjson.json"
echo '{"id": "a", "description": "d", "rank": [1]}' > "$work/unknown.json"
echo '{"id": 3, "description": "d"}' > "$work/id.json"
echo '{"id": "a", "description": "d", "ranks": "one"}' > "$work/ranks.json"
for m in reentrant; do
  expect 2 "$work/notjson.json" "not JSON" -- "$py" -m rcts_pytorch "$work/notjson.json" --rcts-dump "$work" --out "$work/o"
  expect 2 "$work/unknown.json: /: unknown key 'rank'" -- "$py" -m rcts_pytorch "$work/unknown.json" --rcts-dump "$work" --out "$work/o"
  expect 2 "$work/id.json: /id: 3 is not a string" -- "$py" -m rcts_pytorch "$work/id.json" --rcts-dump "$work" --out "$work/o"
  expect 2 "$work/ranks.json: /ranks" -- "$py" -m rcts_pytorch "$work/ranks.json" --rcts-dump "$work" --out "$work/o"
  expect 2 "no rcts dump of case 'rng.attention_dropout_only'" -- "$py" -m rcts_pytorch "$case_ok" --rcts-dump "$work/none" --out "$work/o"
  # An --out that cannot hold dumps: refused naming it (both adapters), not a traceback.
  : > "$work/a_file"
  expect 2 "--out $work/a_file: exists and is not a directory" -- "$py" -m rcts_pytorch "$case_ok" --rcts-dump "$work" --out "$work/a_file"
  expect 2 "--out /proc/rcts-none: cannot make the directory" -- "$py" -m rcts_pytorch "$case_ok" --rcts-dump "$work" --out /proc/rcts-none
done
# An rcts dump whose manifest lacks its config, or is not JSON.
d="$work/dump/rng.attention_dropout_only/cpu/rank0/baseline" && mkdir -p "$d"
echo '{"format": "rcts-dump", "version": 1, "run": {"name": "baseline", "role": "baseline"}}' > "$d/dump.json"
expect 2 "$d/dump.json: /: missing field 'config'" -- "$py" -m rcts_pytorch "$case_ok" --rcts-dump "$work/dump" --out "$work/o"
echo '{' > "$d/dump.json"
expect 2 "$d/dump.json: not JSON" -- "$py" -m rcts_pytorch "$case_ok" --rcts-dump "$work/dump" --out "$work/o"

# F16: check-pytorch itself.
expect 2 "$work/unknown.json: /: unknown key 'rank'" -- "$root/scripts/check-pytorch" "$work/unknown.json" --rcts "$rcts" --out "$work/c1"
expect 2 "$work/missing.json: no such case file" -- "$root/scripts/check-pytorch" "$work/missing.json" --rcts "$rcts" --out "$work/c2"
expect 2 "--modes reentrant,fast" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --modes reentrant,fast --out "$work/c3"
echo '{"format": "rcts-expectations", "version": 1, "implementation": "pytorch-reentrant", "implementation_version": "x", "entries": [{"case": "a", "outcome": "fail", "checks": ["bitwise"], "reason": ""}]}' > "$work/exp.json"
expect 2 "$work/exp.json: /entries/0/reason" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --modes reentrant --expect "$work/exp.json" --out "$work/c4"
echo '{"format": "rcts-expectations", "version": 1, "implementation": "pytorch-reentrant", "implementation_version": "x", "entries": [{"case": "a", "outcome": "fail", "checks": ["bitwse"], "reason": "r"}]}' > "$work/exp2.json"
expect 2 "$work/exp2.json: /entries/0/checks/0 = \"bitwse\": unknown check kind" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --modes reentrant --expect "$work/exp2.json" --out "$work/c5"

# An empty mode list runs nothing: refused, not a silent exit 0. An --out that cannot be made,
# and an --expect that is a directory or missing, are refused naming them (both drivers).
expect 2 "--modes : '' is not one of" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --modes '' --out "$work/c7"
expect 2 "--out /proc/rcts-none: cannot make it" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --modes reentrant --out /proc/rcts-none
expect 2 "--out /proc/rcts-none: cannot make it" -- "$root/scripts/check-megatron" "$case_ok" --rcts "$rcts" --python "$py" --out /proc/rcts-none
expect 2 "--expect $work: a directory, not an expectation file" -- "$root/scripts/check-megatron" "$case_ok" --rcts "$rcts" --python "$py" --expect "$work" --out "$work/m4"
# A --json that cannot be written is refused before the run, by both drivers (not a traceback after it).
expect 2 "--json $work/no/such/dir/r.json: cannot write into" -- "$root/scripts/check-pytorch" "$case_ok" --rcts "$rcts" --modes reentrant --json "$work/no/such/dir/r.json" --out "$work/c6"
expect 2 "--json $work: a directory" -- "$root/scripts/check-megatron" "$case_ok" --rcts "$rcts" --python "$py" --json "$work" --out "$work/m3"

# scripts/check-megatron refuses what check-pytorch refuses, with the kit's case reader: bad case files, bad --ranks.
echo '[{"id": "a"}]' > "$work/array.json"
for f in notjson.json id.json ranks.json array.json missing.json; do
  want=$(case $f in notjson.json) echo "not JSON";; id.json) echo "/id: 3 is not a string";;
         ranks.json) echo "/ranks: 'one' is not a non-empty list";; array.json) echo "/: a case is a JSON object";;
         missing.json) echo "no such case file or directory";; esac)
  expect 2 "$work/$f" "$want" -- "$root/scripts/check-megatron" "$work/$f" --rcts "$rcts" --python "$py" --out "$work/m1"
done
for r in abc 0 1,,2 -1; do
  expect 2 "--ranks $r: '" "is not a world size" -- "$root/scripts/check-megatron" "$case_ok" --rcts "$rcts" --python "$py" --ranks "$r" --out "$work/m2"
done
# The Megatron adapter reads case files with the kit's strict reader, as the PyTorch adapter does.
mpp="$root/adapters/megatron:$root/adapters/kit"
expect 2 "$work/ranks.json: /ranks" -- env PYTHONPATH="$mpp" "$py" -m rcts_megatron "$work/ranks.json" --rcts-dump "$work" --out "$work/o"
expect 2 "$work/unknown.json: /: unknown key 'rank'" -- env PYTHONPATH="$mpp" "$py" -m rcts_megatron "$work/unknown.json" --rcts-dump "$work" --out "$work/o"
: > "$work/a_file"
expect 2 "--out $work/a_file: exists and is not a directory" -- env PYTHONPATH="$mpp" "$py" -m rcts_megatron "$case_ok" --rcts-dump "$work" --out "$work/a_file"
echo '{"id": "a", "description": "d", "expect": 5}' > "$work/expect.json"
expect 2 "$work/expect.json: /expect: 5 is not an object" -- env PYTHONPATH="$mpp" "$py" -m rcts_megatron "$work/expect.json" --rcts-dump "$work" --out "$work/o"
expect 2 "$d/dump.json: not JSON" -- env PYTHONPATH="$mpp" "$py" -m rcts_megatron "$case_ok" --rcts-dump "$work/dump" --out "$work/o"
exit $bad
