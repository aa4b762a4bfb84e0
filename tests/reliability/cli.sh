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
# An output never overwrites an input, nor another output (resolved paths, symlinks and
# hard links included): every command refuses with exit 2, every input byte for byte as before.
output_clash)
  cp "$one" c.json && ln -s c.json link.json && ln c.json hard.json || exit 1
  run run c.json --json r0.json --dump dumps
  [ -s r0.json ] || fail "setup: no results JSON: $out"
  printf '{"format": "rcts-expectations", "version": 1, "implementation": "rcts", "implementation_version": "1", "entries": []}\n' >e.json
  sums() { sha256sum c.json e.json r0.json $(find dumps -name dump.json); }
  before=$(sums)
  refused() {
    run "$@"
    [ "$rc" = 2 ] || fail "rcts $*: exit $rc, want 2 (refused): $(echo "$out" | tail -3)"
    grep -q "refusing to overwrite an input\|are the same file\|lies inside the input directory\|is written whole" <<<"$out" ||
      fail "rcts $*: the refusal does not say why: $(echo "$out" | tail -3)"
  }
  refused run c.json --json c.json
  refused run c.json --json link.json
  refused run c.json --junit hard.json
  refused run c.json --json x.json --junit x.json
  refused run c.json --json x.json --junit ./sub/../x.json
  refused run c.json --expect e.json --json e.json
  refused run c.json --expect e.json --update-expectations --junit e.json.new
  refused run c.json --dump . --dump-replace
  refused run c.json --report dumps --report-replace --dump dumps/inner
  refused check dumps --cases c.json --expect e.json --json e.json
  refused check dumps --cases c.json --json dumps/results.json
  refused matrix r0.json --html r0.json
  refused matrix label=r0.json --markdown ./r0.json
  refused merge-reports r0.json --json r0.json
  refused merge-reports 1=r0.json --junit r0.json
  refused regen-golden c.json --golden-dir .
  [ "$(sums)" = "$before" ] || fail "an input changed: $(diff <(echo "$before") <(sums))"
  [ ! -e x.json ] || fail "a refused run wrote x.json"
  # Devices are no clash: both reports may go to /dev/null.
  run run c.json --json /dev/null --junit /dev/null
  [ "$rc" = 0 ] || fail "--json /dev/null --junit /dev/null: exit $rc: $(echo "$out" | tail -3)"
  ;;
# --update-expectations creates FILE.new afresh: a symlink planted there is replaced, never written through.
update_symlink)
  cp "$one" c.json
  id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' c.json)
  printf '{"format": "rcts-expectations", "version": 1, "implementation": "rcts", "implementation_version": "1", "entries": [{"case": "%s", "ranks": [1], "outcome": "fail", "checks": ["golden"], "reason": "a planted entry the run contradicts"}]}\n' "$id" >e.json
  echo precious >victim
  ln -s victim e.json.new
  run run c.json --backend cpu --expect e.json --update-expectations
  grep -q "wrote e.json.new" <<<"$out" || fail "no proposal written: $(echo "$out" | tail -5)"
  [ "$(cat victim)" = precious ] || fail "--update-expectations wrote through the symlink at e.json.new into victim"
  [ -f e.json.new ] && [ ! -L e.json.new ] || fail "e.json.new is not a regular file: $(ls -l e.json.new)"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' e.json.new || fail "e.json.new is not JSON"
  rm e.json.new && mkfifo e.json.new
  out=$(timeout 30 "$rcts" run c.json --backend cpu --expect e.json --update-expectations 2>&1); rc=$?
  [ "$rc" = 2 ] && grep -q "e.json.new: it is not a regular file" <<<"$out" || fail "a FIFO at e.json.new: exit $rc: $(echo "$out" | tail -3)"
  ;;
# What a killed regen-golden left in the golden directory is removed by the next regen, even
# one that writes nothing (--check); what it cannot judge (another host's) is warned about.
regen_leftovers)
  mkdir gold && cp -r "$(dirname "$cases")/golden/cpu" gold/ || exit 1
  host=$(hostname | tr '/-' '__')
  dead=$(sh -c 'echo $$')  # a process that has ended
  mine=gold/.cpu.regen-$host-$dead-AbCdEf other=gold/.cpu.regen-elsewhere-1-XyZabc
  mkdir "$mine" "$other" && cp gold/cpu/selective.none.*.json "$mine/" && touch "$other/x.json"
  run run "$one" --golden-dir gold
  grep -q "warning: $mine is left over from a killed regen-golden" <<<"$out" || fail "run does not warn of $mine: $(echo "$out" | tail -3)"
  grep -q "warning: $other is left over" <<<"$out" || fail "run does not warn of $other"
  run regen-golden "$cases/selective" --golden-dir gold --filter 'selective.none.*' --check
  [ "$rc" = 0 ] || fail "regen-golden --check: exit $rc: $(echo "$out" | tail -3)"
  [ ! -e "$mine" ] || fail "regen-golden --check left $mine"
  [ -e "$other" ] || fail "regen-golden removed $other, which another host's process may still write"
  grep -q "warning: $other is left over" <<<"$out" || fail "regen-golden does not warn of $other"
  ;;
# A failed write of stdout is an error for every command (exit non-zero, a message), never a pass.
stdout_full)
  [ -w /dev/full ] || { echo "no /dev/full"; exit 77; }
  run run "$one" --json r.json
  id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$one")
  n=0
  while IFS= read -r line; do
    eval "args=($line)"
    out=$(timeout 120 "$rcts" "${args[@]}" 2>&1 >/dev/full); rc=$?
    [ "$rc" != 0 ] || fail "rcts $line > /dev/full exited 0"
    grep -q "cannot write standard output: No space left on device" <<<"$out" || fail "rcts $line > /dev/full: $out"
    n=$((n + 1))
  done <<LIST
--help
--version
run "$one"
run "$one" --golden-only
list
list --json
list --tsv
explain $id
memory
memory --json
advise --budget 1GiB
block
checks
mutants --list
matrix r.json
merge-reports r.json
regen-golden "$cases/selective" --filter selective.none.* --check
LIST
  echo "$n commands refuse a full stdout"
  ;;
# Skip markers: plain files of at most 4 KiB; their text reaches the terminal, the JSON,
# the JUnit and the matrix without control characters, raw HTML or invalid UTF-8.
markers)
  id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$one")
  printf '{"format": "rcts-expectations", "version": 1, "implementation": "x", "implementation_version": "1", "entries": []}\n' >e.json
  mkdir -p m/$id
  ln -s /etc/passwd m/$id/SKIPPED
  run check m --cases "$one" --expect e.json
  [ "$rc" = 2 ] && grep -q "m/$id/SKIPPED: a skip marker must be a plain file, this is a symlink to '/etc/passwd'" <<<"$out" ||
    fail "a symlinked marker: exit $rc: $(echo "$out" | head -5)"
  grep -q "root:" <<<"$out" && fail "the symlinked file reached the output"
  rm m/$id/SKIPPED && head -c 200000 /dev/zero | tr '\0' x >m/$id/SKIPPED
  run check m --cases "$one" --expect e.json
  [ "$rc" = 2 ] && grep -q "200000 bytes: a skip marker holds one short reason (at most 4096 bytes)" <<<"$out" ||
    fail "a 200 kB marker: exit $rc: $(echo "$out" | head -c 300)"
  printf '<script>x</script> bad \xff\xfe bytes \x1b[31mred\x1b[0m\n\n' >m/$id/SKIPPED
  run check m --cases "$one" --expect e.json --json r.json --junit r.xml
  [ "$rc" -le 1 ] || fail "a hostile marker's text: exit $rc: $out"
  python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' r.json || fail "r.json is not UTF-8 JSON"
  python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' r.xml || fail "r.xml is not XML"
  grep -q $'\x1b' <<<"$out" && fail "an ANSI escape reached the terminal: $(grep -a $'\x1b' <<<"$out" | od -c | head -3)"
  grep -q '<script>x</script> bad .* bytes \[31mred\[0m' r.json || fail "the reason lost its text: $(grep -o 'skipped by.*' r.json)"
  run matrix r.json --markdown r.md
  [ "$rc" = 0 ] || fail "matrix: $out"
  grep -q '<script>' r.md && fail "raw HTML in the markdown: $(grep '<script>' r.md)"
  grep -q '&lt;script&gt;' r.md || fail "the markdown lost the reason: $(cat r.md)"
  # Ids longer than 200 characters that share their first 200 get a directory each.
  long=long.$(printf 'a%.0s' $(seq 210))
  mkdir lc
  for t in one two; do
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["id"] = sys.argv[3]; json.dump(c, open(sys.argv[2], "w"))' \
      "$one" "lc/$t.json" "$long.$t"
    d=$(python3 -c 'import hashlib, sys; s = sys.argv[1]; print(s[:183] + "-" + hashlib.sha256(s.encode()).hexdigest()[:16])' "$long.$t")
    mkdir -p lm/$d && echo "reason $t" >lm/$d/SKIPPED
  done
  run check lm --cases lc --expect e.json --json l.json
  python3 -c '
import json, sys
r = {c["id"]: c["reason"] for c in json.load(open(sys.argv[1]))["cases"]}
for t in ("one", "two"):
    got = r[sys.argv[2] + "." + t]
    assert got.endswith("reason " + t), (t, got)' l.json "$long" || fail "long ids: $(echo "$out" | tail -5)"
  ;;
# A rank stopped (SIGSTOP) just before MPI_Init or just before MPI_Finalize, where the
# other rank waits for it: the job ends within 20 s, naming it.
stop_in_init | stop_in_finalize)
  at=init && [ "$test" = stop_in_finalize ] && at=finalize
  t0=$(date +%s)
  out=$(RCTS_TEST_STOP_AT=1:$at timeout 60 "${mpirun[@]}" -n 2 "$rcts" run "$cases/pipeline/pp2.mb1.json" 2>&1); rc=$?
  t=$(($(date +%s) - t0))
  [ "$rc" != 124 ] || fail "the job still ran 60 s after rank 1 stopped before MPI_$at: $(echo "$out" | tail -5)"
  [ "$t" -le 20 ] || fail "the job took $t s to end"
  [ "$rc" != 0 ] || fail "exit 0 with a rank killed"
  grep -q "rank 1 (pid [0-9]*) has been stopped" <<<"$out" || fail "no message names rank 1: $(echo "$out" | tail -5)"
  echo "ended $t s after rank 1 stopped before MPI_$at"
  ;;
# A case deadlocked in its own communication (rank 1 waits for a message nobody sends):
# every rank ends at the case's deadline, naming the case, itself and what it waited in.
case_deadlock)
  t0=$(date +%s)
  out=$(RCTS_TEST_DEADLOCK_ON_RANK=1 RCTS_CASE_TIMEOUT=3 timeout 120 "${mpirun[@]}" -n 2 "$rcts" run \
        "$cases/pipeline/pp2.mb1.json" 2>&1); rc=$?
  t=$(($(date +%s) - t0))
  [ "$rc" != 124 ] || fail "the deadlocked job still ran after 120 s: $(echo "$out" | tail -5)"
  [ "$rc" != 0 ] || fail "a deadlocked case exited 0"
  [ "$t" -le 30 ] || fail "the job took $t s to end (RCTS_CASE_TIMEOUT=3)"
  id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$cases/pipeline/pp2.mb1.json")
  grep -q "rank 1: case $id: still waiting in MPI_Recv from rank 0 .* (RCTS_CASE_TIMEOUT = 3 s)" <<<"$out" ||
    fail "no message names rank 1's wait: $(echo "$out" | tail -5)"
  grep -q "rank 0: case $id: still waiting in " <<<"$out" || fail "no message names rank 0's wait: $(echo "$out" | tail -5)"
  msg=$(grep -m1 'rank 1: case' <<<"$out")
  out=$(RCTS_CASE_TIMEOUT=soon timeout 60 "${mpirun[@]}" -n 2 "$rcts" run "$cases/pipeline/pp2.mb1.json" 2>&1); rc=$?
  [ "$rc" != 0 ] && grep -q "RCTS_CASE_TIMEOUT = 'soon'" <<<"$out" || fail "RCTS_CASE_TIMEOUT=soon: exit $rc: $(echo "$out" | tail -3)"
  echo "ended $t s after the start; $msg"
  ;;
*) fail "unknown test $test" ;;
esac
echo "ok: $test"
