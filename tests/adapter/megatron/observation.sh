#!/usr/bin/env bash
# Observation never changes what megatron-core computes (adapters/megatron/rcts_megatron/modes.py):
# output_discarding.layernorm.f32 through scripts/check-megatron with nothing recorded
# (RCTS_MEGATRON_SAVES=none) and with the adapter's recording (shadow, the default) must hold
# the same numbers bit for bit (same_numbers.py). Without --quick, also the outcome rcts check
# gives with a saved-tensor hook around the computed forward (the adapter's old recording
# hooks; a user's save_on_cpu), each as observation.expected says for the release.
#
#   observation.sh RCTS PYTHON RELEASE WORK [--quick]     (RELEASE: one of releases.txt, or
#                                                         "venv" for the venv's megatron-core)
# Exit 0 when all holds, 1 naming what did not, 2 on bad usage.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
(($# >= 4)) || { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2; exit 2; }
rcts=$1 python=$2 release=$3 work=$4 quick=${5:-}
case_file="$root/cases/output_discarding/layernorm.f32.json" id=output_discarding.layernorm.f32
rel=()
[ "$release" = venv ] || rel=(--release "$release")
[ "$release" != venv ] || release="$(grep -v '^#' "$root/adapters/megatron/releases.txt" | sed '/^\s*$/d' | tail -1)"
rm -rf "$work" && mkdir -p "$work"
run() {  # run MODE ENV...: the case through check-megatron with ENV; prints its outcome line
  local mode=$1; shift
  env "$@" "$root/scripts/check-megatron" "$case_file" "${rel[@]}" --rcts "$rcts" --python "$python" \
    --out "$work/$mode" >"$work/$mode.log" 2>&1
  grep -E "^(PASS|FAIL|ERROR|SKIP) +w1 $id" "$work/$mode.log" || { echo "$mode: no outcome (log: $work/$mode.log)"; tail -5 "$work/$mode.log"; }
}
dump() { echo "$work/$1/megatron/w1/$id/megatron-cpu"; }
status=0
run none RCTS_MEGATRON_SAVES=none >/dev/null
run shadow RCTS_MEGATRON_SAVES=shadow
if "$python" "$here/same_numbers.py" "$(dump none)" "$(dump shadow)"; then
  echo "observation: megatron-core $release computes the same bits recorded (shadow) as unrecorded (none)"
else
  echo "observation: the adapter's recording changes what megatron-core $release computes"
  status=1
fi
[ "$quick" = --quick ] && exit $status
want=$(awk -v r="$release" '$1 == r {print $2, $3}' "$here/observation.expected")
[ -n "$want" ] || { echo "observation: $release has no line in $here/observation.expected"; exit 1; }
read -r want_hooks want_cpu <<<"$want"
for m in "hooks RCTS_MEGATRON_SAVES=hooks $want_hooks" "save_on_cpu RCTS_MEGATRON_USER_HOOKS=save_on_cpu $want_cpu"; do
  read -r mode setting expected <<<"$m"
  line=$(run "$mode" "$setting")
  got=pass
  [[ $line == PASS* ]] || got="fail:$(sed -n 's/.*\[\(.*\)\].*/\1/p' <<<"$line" | tr -d ' ')"
  same=$("$python" "$here/same_numbers.py" "$(dump none)" "$(dump "$mode")")
  if [ "$got" = "$expected" ]; then
    echo "observation: $release with $setting: $got, as expected ($same)"
  else
    echo "observation: $release with $setting: $got, expected $expected ($line; $same)"
    status=1
  fi
done
exit $status
