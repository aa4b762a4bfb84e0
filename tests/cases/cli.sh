#!/usr/bin/env bash
# The CLI as a user meets it, one CTest per test: cli.sh RCTS CASES DOCS WORK TEST [SANITIZER].
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
# Hostile input files: nesting 100k deep, numbers beyond a double, duplicate keys, invalid
# UTF-8, a directory as a config. Each is an error (exit 2) naming the file, the JSON path
# and the value, for run, explain, memory and block; none crashes. The files are written
# here (100k-deep ones are too big to commit).
hostile_input)
  mkdir dir && cp "$cases/full/uniform.bf16.json" dir/
  python3 - <<'PY'
deep = '{"id": "x.deep", "description": "d", "config": {"model": {"num_layers": ' + "[" * 100000 + "]" * 100000 + \
       '}}, "expect": {"golden": true}}'
files = {
    "deep_array.json": deep, "dir/zz_deep.json": deep,
    "deep_object.json": '{"model": ' + '{"a": ' * 100000 + "1" + "}" * 100000 + "}",
    "huge_number.json": '{"id": "x.huge", "description": "d", "config": {"model": {"hidden_dropout": 1e800}}, '
                        '"expect": {"golden": true}}',
    "huge_number_config.json": '{"run": {"steps": 1}, "offload": {"link_latency_us": -1e400}}',
    "duplicate_key.json": '{"id": "x.a", "description": "d", "id": "x.b", "expect": {"golden": true}}',
    "duplicate_key_config.json": '{"model": {"num_layers": 2, "hidden_size": 64, "num_layers": 3}}',
}
for name, text in files.items():
    open(name, "w").write(text)
open("invalid_utf8.json", "wb").write(b'{"id": "x.u", "description": "bad \xff byte", "expect": {"golden": true}}')
PY
  deep_msg="/config/model/num_layers(/0)+ = \\[\\.\\.\\.: nested deeper than 64 levels"
  expect run_deep_array 2 "deep_array.json: $deep_msg" run deep_array.json
  expect explain_deep_array 2 "deep_array.json: $deep_msg" explain deep_array.json
  expect run_directory_names_the_file 2 "dir/zz_deep.json: $deep_msg" run dir
  expect memory_deep_object 2 "deep_object.json: /model(/a)+ = \\{\\.\\.\\.: nested deeper than 64 levels" \
    memory --config deep_object.json
  expect run_huge_number 2 \
    "huge_number.json: /config/model/hidden_dropout = 1e800: number out of range of a double \\(line 1, column 77\\)" \
    run huge_number.json
  expect memory_huge_number 2 "huge_number_config.json: /offload/link_latency_us = -1e400: number out of range" \
    memory --config huge_number_config.json
  expect run_duplicate_key 2 "duplicate_key.json: /id: duplicate key \"id\"" run duplicate_key.json
  expect memory_duplicate_key 2 "duplicate_key_config.json: /model/num_layers: duplicate key \"num_layers\"" \
    memory --config duplicate_key_config.json
  expect run_invalid_utf8 2 "invalid_utf8.json: /description = '[^']*\\\\x[0-9a-f][0-9a-f][^']*': invalid JSON \\(line 1, column [0-9]+\\): .*ill-formed UTF-8" \
    run invalid_utf8.json
  expect memory_config_directory 2 "dir: is a directory, not a config file" memory --config dir
  expect block_config_directory 2 "dir: is a directory, not a config file" block --config dir
  ;;
# Resource limits: configs that would run for ever, exhaust memory or sleep for ever in
# the link model are refused before they start, naming the case; the memory model
# reports int64 overflow instead of negative bytes; a bad_alloc is an error of its case
# and the run goes on. A hang fails by the 60 s timeout.
limits)
  write_case() {
    echo "{\"id\": \"x.$1\", \"description\": \"d\", \"config\": $2, \"expect\": {\"golden\": true}}" >"$1.json"
  }
  write_case micro_batches '{"run": {"micro_batches": 1000000000}}'
  write_case steps '{"run": {"steps": 2147483647}}'
  write_case layers '{"model": {"num_layers": 1000000000}}'
  echo '{"id": "x.slow_link", "description": "d", "config": {}, "variants": [{"name": "v", "config": {"offload": {"fine_grained_activation_offloading": true, "offload_modules": ["core_attn"], "min_offloaded_tensor_size": 16, "link_bandwidth_gbps": 1e-12}}}], "expect": {"bitwise": true}}' >slow_link.json
  write_case big '{"model": {"num_layers": 64, "hidden_size": 65536, "num_attention_heads": 64, "seq_length": 64, "micro_batch_size": 1, "ffn_hidden_size": 65536}}'
  # A 3 PB weight: over the estimate; with the limits raised, the allocation fails.
  write_case huge_alloc '{"model": {"num_layers": 1, "hidden_size": 16777216, "num_attention_heads": 1, "seq_length": 1, "micro_batch_size": 1, "ffn_hidden_size": 4}}'
  echo '{"model": {"num_layers": 1000000000}}' >layers_config.json
  echo '{"model": {"num_layers": 64, "hidden_size": 65536, "num_attention_heads": 64, "ffn_hidden_size": 65536}}' >big_config.json
  # 2 * a*s^2*b = 2^63 bytes of softmax output: wrapped to INT64_MIN before.
  echo '{"model": {"hidden_size": 4096, "num_attention_heads": 4096, "seq_length": 1048576, "micro_batch_size": 1024, "ffn_hidden_size": 4096}}' >overflow_config.json
  expect micro_batches 1 "run.micro_batches = 1000000000 must be <= 65536 .*\\[run.limit\\]" run micro_batches.json
  expect steps 1 "run.steps = 2147483647 must be <= 65536 .*\\[run.limit\\]" run steps.json
  expect layers 1 "model.num_layers = 1000000000 must be <= 1024 .*\\[model.num_layers_limit\\]" run layers.json
  expect memory_layers 2 "layers_config.json: /model/num_layers = 1000000000: model.num_layers = 1000000000 must be <= 1024" \
    memory --config layers_config.json
  expect slow_link 1 "offload.link_bandwidth_gbps = 1e-12 must be 0 \\(strict streams\\) or >= 0.01" run slow_link.json
  expect explain_slow_link 2 "offload.link_bandwidth_gbps = 1e-12" explain slow_link.json
  expect over_estimate 1 \
    "case x.big \\(baseline\\): the run would need an estimated .* over the limit of 8 GiB; raise it with --max-bytes" \
    run big.json
  expect block_over_estimate 2 "big_config.json: the run would need an estimated" block --config big_config.json
  # AddressSanitizer's allocator aborts on an allocation it cannot serve instead of
  # throwing std::bad_alloc, so this one check runs in plain builds only.
  if [ "${6:-}" = address ]; then
    echo "bad_alloc_names_the_case: skipped in the address-sanitizer build (its allocator aborts instead of throwing)"
  else
    expect bad_alloc_names_the_case 1 \
      "case x.huge_alloc \\([^)]*huge_alloc.json\\): out of memory \\(std::bad_alloc\\).*1 passed, 1 failed" \
      run huge_alloc.json "$cases/full/uniform.bf16.json" --max-bytes 1e30 --max-work 1e30
  fi
  expect memory_overflow 2 "memory model: bytes of attention.softmax.output = .* overflows int64" \
    memory --config overflow_config.json
  [[ $out =~ " -"[0-9] ]] && fail memory_overflow "printed a negative count:"$'\n'"$out"
  expect memory_realistic 0 "stored \\(one micro-batch\\)" memory --config "$docs/examples/gpt_s4096_tp2_sp.json"
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
