#!/usr/bin/env bash
# The CLI as a user meets it, one CTest per test: cli.sh RCTS CASES DOCS WORK TEST.
# Each test runs many invocations and checks them all: every broken behaviour is listed,
# then it exits 1 (0 when none).
set -uo pipefail
rcts=$1 cases=$2 docs=$3 work=$4 test=$5
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

failures=()
fail() { failures+=("$1: $2"); }
# expect NAME RC REGEX ARGS...: `rcts ARGS...` exits with RC (a crash or a timeout never
# matches) and its stdout then stderr match the extended regex REGEX (`.` matches a
# newline, ^ and $ are the ends of the output). The output, trailing newlines kept: $out.
expect() {
  local name=$1 want=$2 re=$3
  shift 3
  timeout 60 "$rcts" "$@" >stdout 2>stderr
  local rc=$?
  out=$(cat stdout stderr; echo .)
  out=${out%.}
  if [ "$rc" != "$want" ]; then
    fail "$name" "exit '$rc', expected $want"$'\n'"${out:0:2000}"
  elif ! [[ $out =~ $re ]]; then
    fail "$name" "output does not match '$re'"$'\n'"${out:0:2000}"
  fi
}

case $test in
# rcts run writes a summary whose last line is the tally, plus valid JSON and JUnit.
run_reports)
  "$rcts" run "$cases" --filter "selective.core_attn.*" --json r.json --junit r.xml >stdout
  rc=$?
  out=$(cat stdout; echo .)
  out=${out%.}
  if [ "$rc" != 0 ]; then
    fail run "rcts run failed ($rc):"$'\n'"$out"
  elif tally=$'2 passed, 0 failed, 0 skipped\n$' && ! [[ $out =~ $tally ]]; then
    fail run "summary does not end with the tally:"$'\n'"$out"
  fi
  n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["cases"]))' r.json 2>&1)
  [ "$n" = 2 ] || fail json "results JSON lists $n cases, expected 2"
  xml=$(cat r.xml 2>&1)
  [[ $xml =~ "<testsuites" && $xml =~ 'tests="2"' ]] || fail junit "JUnit XML is not as expected:"$'\n'"$xml"
  ;;
# rcts run --dump writes one format-1 dump per run (docs/dump-format.md): a manifest
# naming every tensor, shapes kept, bf16 as raw '<u2' bits, every dropout draw's mask
# with its site, stream, seed, offset and draw kind, recompute draws in the variant.
dump)
  if ! "$rcts" run "$cases" --filter "selective.core_attn.bf16" --dump d >stdout; then
    fail run "rcts run --dump failed:"$'\n'"$(cat stdout)"
  else
    said=$(python3 - d/selective.core_attn.bf16/cpu/rank0 2>&1 <<'PY'
import json, os, sys
rank = sys.argv[1]
m = json.load(open(os.path.join(rank, "baseline", "dump.json")))
if (m["format"], m["version"], m["case"]["id"]) != ("rcts-dump", 1, "selective.core_attn.bf16"):
    print(f"manifest: manifest says {m['format']} {m['version']} {m['case']['id']}")
# The input keeps its (s*b, h) shape and is bf16, stored as its raw bits.
x, model = m["micro_batches"][0]["input"], m["config"]["model"]
sb, h = model["seq_length"] * model["micro_batch_size"], model["hidden_size"]
if x["dtype"] != "bf16" or x["shape"] != [sb, h]:
    print(f"input: input is {x['dtype']} {x['shape']}, expected bf16 ({sb}, {h})")
with open(os.path.join(rank, "baseline", x["file"]), "rb") as f:
    head = f.read(128)
if b"'descr': '<u2'" not in head or f"'shape': ({sb}, {h})".encode() not in head:
    print(f"npy: {x['file']}: the .npy header is not bf16 bits of shape ({sb}, {h}): {head!r}")
if not m["masks"]:
    print("masks: no masks in a case with dropout")
for key in ("site", "stream", "seed", "offset", "draw", "layout"):
    if m["masks"] and key not in m["masks"][0]:
        print(f"masks: mask 0 has no {key}")
with open(os.path.join(rank, "selective_core_attn", "dump.json")) as f:
    if '"draw": "recompute"' not in f.read():
        print("recompute: the selective variant's dump records no recompute draw")
PY
    )
    if [ $? != 0 ]; then
      fail dump "the dump could not be read:"$'\n'"$said"
    else
      while IFS= read -r line; do [ -z "$line" ] || fail "${line%%: *}" "${line#*: }"; done <<<"$said"
    fi
  fi
  ;;
# Runs that would check nothing fail and say why: an empty directory, a --filter
# matching no case (run and mutants), an unknown mutant name.
empty_runs)
  mkdir empty
  expect run_empty_dir 2 'empty: no case files \(\*\.json\) in this directory' run empty
  expect mutants_empty_dir 2 'empty: no case files \(\*\.json\) in this directory' mutants empty
  no_match="no case matches --filter 'selectve\.\*' \([0-9]+ cases loaded"
  expect run_filter_no_match 2 "$no_match" run "$cases" --filter "selectve.*"
  expect mutants_filter_no_match 2 "$no_match" mutants "$cases" --filter "selectve.*"
  expect mutants_unknown_name 2 "no mutant named 'no_rng_restor'" mutants "$cases" --only no_rng_restor
  ;;
# `rcts advise`: the recommendation and its figures for the small config of
# tests/memory_model/advise_test.cpp (hand-derived there), JSON, an infeasible budget
# (exit 1), and bad input naming the file or flag, key and value (exit 2).
advise)
  small='"num_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "seq_length": 8, "micro_batch_size": 2, "ffn_hidden_size": 64'
  echo "{\"model\": {$small}, \"run\": {\"micro_batches\": 4}}" >small.json
  echo '{"model": {"hidden_size": "big"}}' >bad_type.json
  echo '{"model": {"hiden_size": 16}}' >bad_key.json
  echo "{\"model\": {$small, \"num_moe_experts\": 4}}" >moe.json
  expect recommends 0 'full block 1 +10496 .* 106496 .*yes  <- cheapest that fits.*recommended: full block 1' \
    advise --config small.json --budget 16000
  expect control_fits 0 $'recommended: selective \\[\\]\n' advise --config small.json --budget 19968
  expect units 0 'budget 1073741824 bytes \(1.000 GiB\)' advise --config small.json --budget 1GiB
  expect json 0 '"name": "full block 1",[^}]*"peak_bytes": 10496.*"recommended": "full block 1"' \
    advise --config small.json --budget 16000 --json
  expect set_flags 0 'micro-batch\(es\) in flight.*selective \[\] +39936 ' \
    advise --config small.json --set parallel.pipeline_model_parallel_size=2 --set model.num_layers=4 --budget 1MiB
  expect infeasible 1 'nothing fits: the smallest peak is 10496 bytes \(full block 1\), over the budget of 10495 bytes' \
    advise --config small.json --budget 10495
  expect bad_type 2 'bad_type.json: /model/hidden_size: expected an integer \(got "big"\)' \
    advise --config bad_type.json --budget 1GiB
  expect bad_key 2 "bad_key.json: /model/hiden_size: unknown key 'hiden_size'" advise --config bad_key.json --budget 1GiB
  expect bad_set 2 '--set model.num_layers=0: /model/num_layers = 0: model.num_layers = 0 must be >= 1' \
    advise --config small.json --set model.num_layers=0 --budget 1GiB
  expect bad_set_form 2 '--set hidden_size: expected section.key=value' advise --set hidden_size --budget 1GiB
  expect bad_budget 2 "--budget '10XB': unknown unit 'XB'" advise --config small.json --budget 10XB
  expect zero_budget 2 "--budget '0': must be positive" advise --config small.json --budget 0
  expect not_modelled 2 'advise: .*moe.json: model.num_moe_experts = 4: the memory model covers dense layers only' \
    advise --config moe.json --budget 1GiB
  ;;
# Megatron-LM settings pasted into `rcts memory`: an argument string, a file of arguments
# and the same run in YAML give the same config with Megatron-LM's defaults (ffn 4h = 8192
# for h = 2048, computed by hand); every problem is printed at once and exits 2; a flat
# config JSON reports all its problems together too.
megatron)
  ffn='"ffn_hidden_size": 8192'
  expect args_file 0 "$ffn"'.*"recompute_modules": \[[^]]*"core_attn",[^]]*"mlp"' \
    memory --megatron-file "$docs/examples/megatron_gpt_1p3b.args" --print-config
  from_args=$out
  expect yaml_file 0 "$ffn" memory --megatron-file "$docs/examples/megatron_gpt_1p3b.yaml" --print-config
  strip() { python3 -c 'import re, sys; sys.stdout.write(re.sub(r"rcts: megatron: ignored[^\n]*\n", "", sys.stdin.read()))'; }
  a=$(strip <<<"$from_args") b=$(strip <<<"$out")
  [ "$a" = "$b" ] || fail yaml_equals_args "the YAML and the argument file map to different configs:"$'\n'"$a"$'\n----\n'"$b"
  expect ignored_listed 0 'ignored \(no effect on what rcts models\): --max-position-embeddings --global-batch-size --lr' \
    memory --megatron-file "$docs/examples/megatron_gpt_1p3b.args"
  expect report 0 's=2048 b=4 h=2048 a=16 ffn=8192 L=24 activation=gelu dtype=bf16.*TP=2 SP=on' \
    memory --megatron-args "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 4 --tensor-model-parallel-size 2 --sequence-parallel --bf16"
  # int((4 * 2048 * 2 / 3) / 64) * 64 = int(85.33) * 64
  expect swiglu 0 'ffn=5440 ' \
    memory --megatron-args "--num-layers 2 --hidden-size 2048 --num-attention-heads 16 --seq-length 64 --micro-batch-size 1 --swiglu"
  expect all_problems 2 $'4 problems in the Megatron-LM arguments of --megatron-args:\n  --num-layer: unknown to rcts \\(did you mean --num-layers\\?\\).*\n  --hidden-size 2O48: expected an integer.*\n  --num-layers: required' \
    memory --megatron-args "--num-layer 24 --hidden-size 2O48 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --normalization RMSNorm"
  expect paste_launcher 2 "'pretrain_gpt.py' is not an argument" memory --megatron-args "pretrain_gpt.py --num-layers 2"
  echo '{"num_layers": "two", "hiden_size": 64, "seq_length": 0, "model": {"attention_dropout": 1.5}}' >flat.json
  expect flat_config_all_problems 2 $'4 problems in .*flat.json:\n.*/hiden_size: unknown section.*\n.*/num_layers: expected an integer.*\n.*/seq_length = 0: .*\n.*/model/attention_dropout = 1.5: ' \
    memory --config flat.json
  ;;
*)
  echo "cli.sh: no test '$test'"
  exit 2
  ;;
esac

if [ ${#failures[@]} -gt 0 ]; then
  echo "${#failures[@]} check(s) failed:"
  printf '%s\n----\n' "${failures[@]}"
  exit 1
fi
echo "cli.$test: every check passed"
