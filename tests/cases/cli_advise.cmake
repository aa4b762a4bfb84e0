# `rcts advise` from the command line: the recommendation and its figures for the
# small config of tests/memory_model/advise_test.cpp (hand-derived there), JSON, an
# infeasible budget (exit 1), and bad input naming the file or flag, key and value (exit 2).
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(small "\"num_layers\": 2, \"hidden_size\": 16, \"num_attention_heads\": 2, \"seq_length\": 8, \"micro_batch_size\": 2, \"ffn_hidden_size\": 64")
file(WRITE ${OUT}/small.json "{\"model\": {${small}}, \"run\": {\"micro_batches\": 4}}")
file(WRITE ${OUT}/bad_type.json "{\"model\": {\"hidden_size\": \"big\"}}")
file(WRITE ${OUT}/bad_key.json "{\"model\": {\"hiden_size\": 16}}")
file(WRITE ${OUT}/moe.json "{\"model\": {${small}, \"num_moe_experts\": 4}}")

rcts_expect(recommends 0 "full block 1 +10496 .* 106496 .*yes  <- cheapest that fits.*recommended: full block 1"
            advise --config ${OUT}/small.json --budget 16000)
rcts_expect(control_fits 0 "recommended: selective \\[\\]\n" advise --config ${OUT}/small.json --budget 19968)
rcts_expect(units 0 "budget 1073741824 bytes \\(1.000 GiB\\)" advise --config ${OUT}/small.json --budget 1GiB)
rcts_expect(json 0 "\"name\": \"full block 1\",[^}]*\"peak_bytes\": 10496.*\"recommended\": \"full block 1\""
            advise --config ${OUT}/small.json --budget 16000 --json)
rcts_expect(set_flags 0 "micro-batch\\(es\\) in flight.*selective \\[\\] +39936 "
            advise --config ${OUT}/small.json --set parallel.pipeline_model_parallel_size=2 --set model.num_layers=4 --budget 1MiB)
rcts_expect(infeasible 1 "nothing fits: the smallest peak is 10496 bytes \\(full block 1\\), over the budget of 10495 bytes"
            advise --config ${OUT}/small.json --budget 10495)
rcts_expect(bad_type 2 "bad_type.json: /model/hidden_size: expected an integer \\(got \"big\"\\)"
            advise --config ${OUT}/bad_type.json --budget 1GiB)
rcts_expect(bad_key 2 "bad_key.json: /model/hiden_size: unknown key 'hiden_size'"
            advise --config ${OUT}/bad_key.json --budget 1GiB)
rcts_expect(bad_set 2 "--set model.num_layers=0: /model/num_layers = 0: model.num_layers = 0 must be >= 1"
            advise --config ${OUT}/small.json --set model.num_layers=0 --budget 1GiB)
rcts_expect(bad_set_form 2 "--set hidden_size: expected section.key=value"
            advise --set hidden_size --budget 1GiB)
rcts_expect(bad_budget 2 "--budget '10XB': unknown unit 'XB'" advise --config ${OUT}/small.json --budget 10XB)
rcts_expect(zero_budget 2 "--budget '0': must be positive" advise --config ${OUT}/small.json --budget 0)
rcts_expect(not_modelled 2 "advise: .*moe.json: model.num_moe_experts = 4: the memory model covers dense layers only"
            advise --config ${OUT}/moe.json --budget 1GiB)
rcts_report()
