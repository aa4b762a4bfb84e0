#!/usr/bin/env bash
# Hostile-user tests of the rcts CLI, one per CTest: cli.sh RCTS CASES WORK TEST.
# Each prints what it saw and exits 1 on a violation, 77 when a tool it needs is missing.
set -uo pipefail
rcts=$1 cases=$2 work=$3 test=$4
mpirun=(mpirun --allow-run-as-root --oversubscribe)
one=$cases/selective/core_attn.f32.json
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
# Runs rcts, keeping its output in $out and its status in $rc.
run() { out=$("$rcts" "$@" 2>&1); rc=$?; }
# No hidden leftovers (staging, aside or temporary files) in a directory.
no_leftovers() {
  local left
  left=$(find "$1" -maxdepth 1 -name '.*' ! -name . | head -5)
  [ -z "$left" ] || fail "leftovers in $1: $left"
}

case $test in
# F3: a dump whose writing failed is not committed; an old dump given to --dump-replace survives it.
failed_dump_not_committed)
  run run "$one" --dump d || true
  [ "$rc" = 0 ] || fail "first dump: $rc $out"
  touch d/OLD
  out=$(RCTS_TEST_FAIL_WRITE=output.npy "$rcts" run "$one" --dump d --dump-replace 2>&1); rc=$?
  [ "$rc" != 0 ] || fail "a failing dump write exited 0: $out"
  [ -e d/OLD ] || fail "the complete old dump was replaced by a failed one: $(find d -maxdepth 5 | head)"
  out2=$(RCTS_TEST_FAIL_WRITE=output.npy "$rcts" run "$one" --dump fresh 2>&1)
  [ ! -e fresh ] || fail "a failed dump was committed to fresh/: $(find fresh -name dump.json | wc -l) manifests"
  no_leftovers .
  grep -q "not written" <<<"$out" || fail "the failure does not say the dump was not written: $out"
  ;;
# F12: two --dump runs racing for one new directory: one wins, the other fails and says so.
dump_race)
  for i in 1 2 3; do
    rm -rf r && "$rcts" run "$one" --dump r >o1 2>&1 & p1=$!
    "$rcts" run "$one" --dump r >o2 2>&1 & p2=$!
    wait $p1; r1=$?; wait $p2; r2=$?
    [ $((r1 == 0)) -ne $((r2 == 0)) ] || fail "round $i: both exited $r1 and $r2 (one must lose): $(cat o1 o2)"
    grep -qh "not empty\|meanwhile" o1 o2 || fail "the loser does not say why: $(cat o1 o2)"
    no_leftovers .
  done
  ;;
# F11: kill -9 at each of the last renames (where outputs are put in place) leaves the old
# target or the new one whole, never none or a mix; the next run leaves nothing behind.
kill_windows)
  command -v strace >/dev/null || { echo "strace not installed"; exit 77; }
  mkdir gold && cp -r "$(dirname "$cases")/golden/cpu" gold/ || exit 1
  stale() { for f in gold/cpu/selective.none.*.json; do echo '{"stale": true}' >"$f"; done; }
  renames="rename,renameat,renameat2"
  for target in dump json report regen; do
    case $target in
      dump) run run "$one" --dump "t.$target"; args=(run "$one" --dump "t.$target" --dump-replace);;
      json) run run "$one" --json "t.$target"; args=(run "$one" --json "t.$target");;
      report) run run "$one" --report "t.$target"; args=(run "$one" --report "t.$target" --report-replace);;
      regen) args=(regen-golden "$cases/selective" --golden-dir gold --filter 'selective.none.*'); stale;;
    esac
    strace -f -qq -o trace.log -e trace=$renames "$rcts" "${args[@]}" >/dev/null 2>&1
    k=$(grep -c 'rename' trace.log)
    [ "$target" = regen ] && stale
    for n in $(seq $((k > 6 ? k - 6 : 1)) "$k"); do
      (strace -f -qq -o /dev/null -e trace=$renames -e inject=$renames:signal=SIGKILL:when=$n "$rcts" "${args[@]}" >/dev/null 2>&1) 2>/dev/null
      if [ "$target" = regen ]; then
        s=$(grep -l '"stale"' gold/cpu/selective.none.*.json | wc -l)
        [ "$s" = 0 ] || [ "$s" = 2 ] || fail "regen-golden killed at rename $n of $k left a mixed set: $s of 2 files stale"
        stale
      else
        [ -e "t.$target" ] || fail "$target killed at rename $n of $k left no target"
        if [ "$target" = json ]; then python3 -c "import json; json.load(open('t.json'))" || fail "json killed at rename $n: t.json is not whole"; fi
        if [ "$target" != json ]; then [ -n "$(ls -A "t.$target")" ] || fail "$target killed at rename $n of $k: t.$target is empty"; fi
      fi
    done
    "$rcts" "${args[@]}" >/dev/null 2>&1 || fail "$target: a clean run after the kills failed"
    no_leftovers .
    no_leftovers gold
    no_leftovers gold/cpu
    echo "$target: killed at renames $((k > 6 ? k - 6 : 1))..$k of $k: old or new whole"
  done
  ;;
# F8: a dumped run the case does not have is refused, not ignored.
extra_run)
  run run "$one" --dump d
  [ "$rc" = 0 ] || fail "dump: $out"
  base=$(dirname "$(find d -path '*/baseline/dump.json')")
  cp -r "$base" "$(dirname "$base")/bogus"
  python3 - "$(dirname "$base")/bogus/dump.json" <<'EOF'
import json, sys
p = sys.argv[1]; j = json.load(open(p)); j["run"] = {"name": "bogus", "role": "variant"}; json.dump(j, open(p, "w"))
EOF
  run check d --cases "$one"
  [ "$rc" != 0 ] || fail "an extra run passed: $out"
  grep -q "bogus" <<<"$out" || fail "the refusal does not name the run: $out"
  # Thousands of runs are refused before any is read.
  mkdir many && for i in $(seq 1 10001); do mkdir -p many/$i && echo '{}' >many/$i/dump.json; done
  run check many --cases "$one"
  [ "$rc" = 2 ] || fail "10001 dumps: exit $rc: $(echo "$out" | tail -3)"
  grep -q "10000" <<<"$out" || fail "the refusal of 10001 dumps does not give the limit: $(echo "$out" | tail -3)"
  ;;
# F13: an empty --megatron-args is refused, not the built-in config; F10: --megatron-file reads regular files only.
megatron_cli)
  run memory --megatron-args "" --print-config
  [ "$rc" = 2 ] || fail "--megatron-args \"\" exited $rc: $(echo "$out" | head -3)"
  grep -q "megatron-args" <<<"$out" || fail "no message naming the option: $out"
  out=$(timeout 20 "$rcts" memory --megatron-file /dev/zero 2>&1); rc=$?
  [ "$rc" = 2 ] || fail "--megatron-file /dev/zero exited $rc: $(echo "$out" | head -c 300)"
  grep -q "/dev/zero: not a regular file" <<<"$out" || fail "/dev/zero: $(echo "$out" | head -c 300)"
  head -c 2000000 /dev/zero | tr '\0' 'x' >big.args
  run memory --megatron-file big.args
  [ "$rc" = 2 ] && grep -q "big.args: 2000000 bytes" <<<"$out" || fail "a 2 MB file: $rc $(echo "$out" | head -c 300)"
  ;;
# F14: MPMD ranks given different output options are refused on every rank.
mpmd_options)
  out=$(timeout 60 "${mpirun[@]}" -n 1 "$rcts" run "$one" --json a.json : -n 1 "$rcts" run "$one" --json b.json 2>&1); rc=$?
  [ "$rc" != 0 ] || fail "ranks with different --json ran: $out"
  grep -q "different commands" <<<"$out" || fail "no verdict: $out"
  ;;
# F9: a rank stopped (SIGSTOP) or killed (SIGKILL) mid-run ends every other rank within 15 s, naming it.
rank_stopped | rank_killed)
  sig=STOP && [ "$test" = rank_killed ] && sig=KILL
  # Two ranks over the non-pipeline areas, every run dumped: about 9 s on a quiet machine,
  # long enough to stop a rank mid-run (the bare case set ends within a second, before the
  # signal; pipeline runs cannot be dumped).
  rm -rf "$PWD/rank_signal.dump"
  "${mpirun[@]}" -n 2 "$rcts" run "$cases/parallel" "$cases/moe" "$cases/offload" "$cases/gdn" "$cases/mla" \
    --dump "$PWD/rank_signal.dump" >mpi.out 2>&1 & job=$!
  victim=""
  for _ in $(seq 1 100); do
    for p in $(pgrep -P "$(pgrep -d, -P $job)" 2>/dev/null; pgrep -f "$rcts run $cases/parallel" 2>/dev/null); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && victim=$p
    done
    [ -n "$victim" ] && grep -q "^ *\[ *[0-9]" mpi.out && break
    sleep 0.2
  done
  [ -n "$victim" ] || { kill $job; fail "rank 1 not found: $(cat mpi.out)"; }
  sleep 1
  kill -$sig "$victim"
  t0=$(date +%s)
  for _ in $(seq 1 60); do kill -0 $job 2>/dev/null || break; sleep 0.5; done
  t=$(($(date +%s) - t0))
  alive=$(kill -0 $job 2>/dev/null && echo yes)
  kill -KILL "$victim" 2>/dev/null; pkill -KILL -P $job 2>/dev/null; kill -KILL $job 2>/dev/null
  [ -z "$alive" ] || fail "the job still runs 30 s after SIG$sig of rank 1: $(tail -5 mpi.out)"
  [ "$t" -le 15 ] || fail "the job took $t s to end after SIG$sig of rank 1"
  grep -q "rank 1" mpi.out || fail "no message names rank 1: $(tail -5 mpi.out)"
  echo "ended $t s after SIG$sig; $(grep -m1 'rank 1' mpi.out)"
  ;;
*) fail "unknown test $test" ;;
esac
echo "ok: $test"
