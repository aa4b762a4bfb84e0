#!/usr/bin/env bash
# The refusal sweep: one hostile input per refusal path of every input
# rcts reads (case files, case directories, Megatron-LM arguments and files, expectation
# files, results JSONs, dump manifests, option values). Each row of refusals.table says
# the rcts arguments, the exit status, and the texts the message must hold: the file
# (or the option), the field or JSON path, and the offending value. No row may crash,
# abort, or leak a library's own words (std::stoll, json.exception).
#   refusals.sh RCTS WORKDIR [ROW-NAME-GLOB]
set -uo pipefail
rcts=$(realpath "$1") work=$2 only=${3:-*}
here=$(cd "$(dirname "$0")" && pwd)
in=$here/refusals table=$here/refusals.table
rm -rf "$work" && mkdir -p "$work" || exit 1
w=$work/in
mkdir -p "$w"

# ---- inputs that are binary, large or derived from rcts's own outputs -----------------
printf '{"id": "r.utf8", "description": "bad \xff\xfe bytes"}\n' > "$w/case_utf8.json"
{ printf '{"id": "r.deep", "description": "x", "config": {"model": '
  for _ in $(seq 100); do printf '['; done; for _ in $(seq 100); do printf ']'; done; printf '}}\n'; } > "$w/case_deep.json"
truncate -s $(( (64 << 20) + 1 )) "$w/case_big.json"
mkdir -p "$w/twins/a" "$w/twins/b"
cp "$in/valid_tiny.json" "$w/twins/a/one.json" && cp "$in/valid_tiny.json" "$w/twins/b/two.json"
# A results JSON and a dump of one small case; the outcome does not matter.
"$rcts" run "$in/valid_tiny.json" --backend cpu --json "$w/results.json" --dump "$w/dump" > "$work/setup.log" 2>&1
[[ -s $w/results.json ]] || { echo "setup: rcts run wrote no results JSON"; cat "$work/setup.log"; exit 1; }
manifest=$(find "$w/dump" -name dump.json | head -1)
[[ -n $manifest ]] || { echo "setup: rcts run --dump wrote no dump.json"; exit 1; }
edit_json() {  # edit_json FROM TO PYTHON-STATEMENT: TO is FROM's JSON `d` after the statement
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); exec(sys.argv[3]); json.dump(d, open(sys.argv[2], "w"))' \
    "$1" "$2" "$3" || exit 1
}
spoil() { edit_json "$w/results.json" "$w/$1.json" "$2"; }  # spoil NAME STATEMENT
spoil_dump() {  # spoil_dump NAME STATEMENT: a copy of the dump with dump.json edited
  local d=$w/dumps/$1
  mkdir -p "$d" && cp "$(dirname "$manifest")"/* "$d/" && edit_json "$manifest" "$d/dump.json" "$2"
}
spoil results_schema 'd["schema"] = "rcts-result"'
spoil results_version 'd["schema_version"] = 99'
spoil results_ranks 'd["header"]["ranks"] = "one"'
spoil results_outcome 'd["cases"][0]["outcome"] = "maybe"'
spoil results_no_cases 'del d["cases"]'
spoil results_ranks_zero 'd["header"]["ranks"] = 0'
spoil results_seed 'd["header"]["seed"] = -5'
spoil results_summary 'd["summary"]["total"] += 1'
spoil results_other_sha 'd["header"]["ranks"] = 2; d["header"]["git_sha"] = "000000000000"'
spoil results_other_seed 'd["header"]["ranks"] = 2; d["header"]["seed"] = 7'
{ cat "$in/expect_issue_url.json"; printf '\0'; } > "$w/expect_nul_byte.json"
spoil_dump format 'd["format"] = "rcts-dumps"'
spoil_dump version 'd["version"] = 7'
spoil_dump unknown_key 'd["extra"] = 1'
spoil_dump role 'd["run"]["role"] = "leader"'
spoil_dump config 'd["config"]["model"]["hidden_size"] = -8'
spoil_dump dtype 'd["parameters"][0]["dtype"] = "f16"'
spoil_dump shape 'd["parameters"][0]["shape"] = [3, 5]'
spoil_dump sha 'd["parameters"][0]["sha256"] = "0" * 64'
spoil_dump file 'd["parameters"][0]["file"] = "../escape.npy"'
spoil_dump steps 'd["steps"] = []'
# A tensor file that is a FIFO, and one that is a loop of symbolic links.
spoil_dump fifo 'pass' && f=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["parameters"][0]["file"])' "$w/dumps/fifo/dump.json") &&
  rm "$w/dumps/fifo/$f" && mkfifo "$w/dumps/fifo/$f" || exit 1
spoil_dump loop 'pass' && rm "$w/dumps/loop/$f" && ln -s "$f" "$w/dumps/loop/$f" || exit 1
# Skip markers (read with --expect): a symlink, an oversized one, a FIFO, a stray one.
printf '{"format": "rcts-expectations", "version": 1, "implementation": "x", "implementation_version": "1", "entries": []}\n' > "$w/expect_empty.json"
mkdir -p "$w/markers/link/r.tiny" "$w/markers/big/r.tiny" "$w/markers/fifo/r.tiny" "$w/markers/stray/nosuch.case"
ln -s /etc/passwd "$w/markers/link/r.tiny/SKIPPED"
head -c 5000 /dev/zero | tr '\0' x > "$w/markers/big/r.tiny/SKIPPED"
mkfifo "$w/markers/fifo/r.tiny/SKIPPED"
echo "a reason" > "$w/markers/stray/nosuch.case/SKIPPED"
# Error markers (an adapter's "the framework raised"): the same rules, and one marker per case.
mkdir -p "$w/markers/elink/r.tiny" "$w/markers/eempty/r.tiny" "$w/markers/two/r.tiny"
ln -s /etc/passwd "$w/markers/elink/r.tiny/ERRORED"
: > "$w/markers/eempty/r.tiny/ERRORED"
echo "IndexError: x" > "$w/markers/two/r.tiny/ERRORED"
echo "a reason" > "$w/markers/two/r.tiny/SKIPPED"
# Outputs named like inputs: copies, so that a failed refusal destroys nothing of the tree.
cp "$in/valid_tiny.json" "$w/clash_case.json" && ln -sf clash_case.json "$w/clash_link.json" || exit 1
printf '{"model": {"hidden_size": 10, "num_attention_heads": 4}}\n' > "$w/config_cross.json"

# ---- the sweep ----------------------------------------------------------------------
bad_words='terminate called|Aborted|Segmentation fault|core dumped|json\.exception|what\(\)|\bstoll\b|\bstod\b|\bstoi\b|\bstoul\b'
rows=0 failed=0
sub() { local s=${1//@in/$in}; printf '%s' "${s//@w/$w}"; }
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  IFS='|' read -r name want args needles <<< "$line"
  name=$(echo $name) want=$(echo $want)
  [[ $name == $only ]] || continue
  rows=$((rows + 1))
  eval "argv=($(sub "$args"))"
  out=$(cd "$work" && timeout 30 "$rcts" "${argv[@]}" 2>&1)
  rc=$?
  why=()
  [[ $rc == "$want" ]] || why+=("exit $rc, want $want")
  grep -Eq "$bad_words" <<< "$out" && why+=("a crash or a library's own message")
  n=0
  while IFS= read -r needle; do
    needle=${needle#"${needle%%[![:space:]]*}"} needle=${needle%"${needle##*[![:space:]]}"}  # trim
    [[ -z $needle ]] && continue
    n=$((n + 1))
    needle=$(sub "$needle")
    grep -Fq -- "$needle" <<< "$out" || why+=("does not name: $needle")
  done <<< "${needles//;;/$'\n'}"
  ((n >= 2)) || why+=("the row lists $n texts; it needs the file or option, the path or field, the value")
  if ((${#why[@]})); then
    failed=$((failed + 1))
    echo "FAIL $name: $(IFS=';'; echo "${why[*]}")"
    echo "  rcts ${argv[*]}"
    sed 's/^/  | /' <<< "$out" | head -12
  else
    echo "ok   $name"
  fi
done < "$table"
echo "refusals: $rows rows, $failed failed"
((rows > 0 && failed == 0))
