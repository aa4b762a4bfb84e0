# Megatron-LM settings pasted into `rcts memory`: an argument string,
# a file of arguments and the same run in YAML give the same config with Megatron-LM's
# defaults (ffn 4h = 8192 for h = 2048, computed by hand); every problem is printed at
# once and exits 2; a flat config JSON reports all its problems together too.
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

set(ffn "\"ffn_hidden_size\": 8192")
rcts_expect(args_file 0 "${ffn}.*\"recompute_modules\": \\[[^]]*\"core_attn\",[^]]*\"mlp\"" memory --megatron-file ${DOCS}/examples/megatron_gpt_1p3b.args --print-config)
set(from_args "${RCTS_LAST_OUTPUT}")
rcts_expect(yaml_file 0 "${ffn}" memory --megatron-file ${DOCS}/examples/megatron_gpt_1p3b.yaml --print-config)
string(REGEX REPLACE "rcts: megatron: ignored[^\n]*\n" "" a "${from_args}")
string(REGEX REPLACE "rcts: megatron: ignored[^\n]*\n" "" b "${RCTS_LAST_OUTPUT}")
if(NOT a STREQUAL b)
  rcts_fail(yaml_equals_args "the YAML and the argument file map to different configs:\n${a}\n----\n${b}")
endif()
rcts_expect(ignored_listed 0 "ignored \\(no effect on what rcts models\\): --max-position-embeddings --global-batch-size --lr"
            memory --megatron-file ${DOCS}/examples/megatron_gpt_1p3b.args)
rcts_expect(report 0 "s=2048 b=4 h=2048 a=16 ffn=8192 L=24 activation=gelu dtype=bf16.*TP=2 SP=on"
            memory --megatron-args "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 4 --tensor-model-parallel-size 2 --sequence-parallel --bf16")
rcts_expect(swiglu 0 "ffn=5440 "  # int((4 * 2048 * 2 / 3) / 64) * 64 = int(85.33) * 64
            memory --megatron-args "--num-layers 2 --hidden-size 2048 --num-attention-heads 16 --seq-length 64 --micro-batch-size 1 --swiglu")
rcts_expect(all_problems 2 "4 problems in the Megatron-LM arguments of --megatron-args:\n  --num-layer: unknown to rcts \\(did you mean --num-layers\\?\\).*\n  --hidden-size 2O48: expected an integer.*\n  --num-layers: required"
            memory --megatron-args "--num-layer 24 --hidden-size 2O48 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --normalization RMSNorm")
rcts_expect(paste_launcher 2 "'pretrain_gpt.py' is not an argument"
            memory --megatron-args "pretrain_gpt.py --num-layers 2")

file(WRITE ${OUT}/flat.json [=[{"num_layers": "two", "hiden_size": 64, "seq_length": 0, "model": {"attention_dropout": 1.5}}]=])
rcts_expect(flat_config_all_problems 2 "4 problems in .*flat.json:\n.*/hiden_size: unknown section.*\n.*/num_layers: expected an integer.*\n.*/seq_length = 0: .*\n.*/model/attention_dropout = 1.5: "
            memory --config ${OUT}/flat.json)
rcts_report()
