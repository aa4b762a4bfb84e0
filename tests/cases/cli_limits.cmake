# Resource limits: configs that would run for ever, exhaust memory or
# sleep for ever in the link model are refused before they start, naming the case;
# the memory model reports int64 overflow instead of negative bytes; a bad_alloc is
# an error of its case and the run goes on. A hang fails by the 60 s timeout.
include(${CMAKE_CURRENT_LIST_DIR}/cli_expect.cmake)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

function(write_case name config)
  file(WRITE ${OUT}/${name}.json
       "{\"id\": \"x.${name}\", \"description\": \"d\", \"config\": ${config}, \"expect\": {\"golden\": true}}")
endfunction()
write_case(micro_batches "{\"run\": {\"micro_batches\": 1000000000}}")
write_case(steps "{\"run\": {\"steps\": 2147483647}}")
write_case(layers "{\"model\": {\"num_layers\": 1000000000}}")
file(WRITE ${OUT}/slow_link.json "{\"id\": \"x.slow_link\", \"description\": \"d\", \"config\": {}, \"variants\": [{\"name\": \"v\", \"config\": {\"offload\": {\"fine_grained_activation_offloading\": true, \"offload_modules\": [\"core_attn\"], \"min_offloaded_tensor_size\": 16, \"link_bandwidth_gbps\": 1e-12}}}], \"expect\": {\"bitwise\": true}}")
write_case(big "{\"model\": {\"num_layers\": 64, \"hidden_size\": 65536, \"num_attention_heads\": 64, \"seq_length\": 64, \"micro_batch_size\": 1, \"ffn_hidden_size\": 65536}}")
# A 3 PB weight: over the estimate; with the limits raised, the allocation fails.
write_case(huge_alloc "{\"model\": {\"num_layers\": 1, \"hidden_size\": 16777216, \"num_attention_heads\": 1, \"seq_length\": 1, \"micro_batch_size\": 1, \"ffn_hidden_size\": 4}}")
file(WRITE ${OUT}/layers_config.json "{\"model\": {\"num_layers\": 1000000000}}")
file(WRITE ${OUT}/big_config.json "{\"model\": {\"num_layers\": 64, \"hidden_size\": 65536, \"num_attention_heads\": 64, \"ffn_hidden_size\": 65536}}")
# 2 * a*s^2*b = 2^63 bytes of softmax output: wrapped to INT64_MIN before.
file(WRITE ${OUT}/overflow_config.json "{\"model\": {\"hidden_size\": 4096, \"num_attention_heads\": 4096, \"seq_length\": 1048576, \"micro_batch_size\": 1024, \"ffn_hidden_size\": 4096}}")

rcts_expect(micro_batches 1 "run.micro_batches = 1000000000 must be <= 65536 .*\\[run.limit\\]" run ${OUT}/micro_batches.json)
rcts_expect(steps 1 "run.steps = 2147483647 must be <= 65536 .*\\[run.limit\\]" run ${OUT}/steps.json)
rcts_expect(layers 1 "model.num_layers = 1000000000 must be <= 1024 .*\\[model.num_layers_limit\\]" run ${OUT}/layers.json)
rcts_expect(memory_layers 2 "layers_config.json: /model/num_layers = 1000000000: model.num_layers = 1000000000 must be <= 1024"
            memory --config ${OUT}/layers_config.json)
rcts_expect(slow_link 1 "offload.link_bandwidth_gbps = 1e-12 must be 0 \\(strict streams\\) or >= 0.01" run ${OUT}/slow_link.json)
rcts_expect(explain_slow_link 2 "offload.link_bandwidth_gbps = 1e-12" explain ${OUT}/slow_link.json)
rcts_expect(over_estimate 1
            "case x.big \\(baseline\\): the run would need an estimated .* over the limit of 8 GiB; raise it with --max-bytes"
            run ${OUT}/big.json)
rcts_expect(block_over_estimate 2 "big_config.json: the run would need an estimated" block --config ${OUT}/big_config.json)
# AddressSanitizer's allocator aborts on an allocation it cannot serve instead of
# throwing std::bad_alloc, so this one check runs in plain builds only.
if(SANITIZE STREQUAL "address")
  message(STATUS "bad_alloc_names_the_case: skipped in the address-sanitizer build (its allocator aborts instead of throwing)")
else()
  rcts_expect(bad_alloc_names_the_case 1
              "case x.huge_alloc \\([^)]*huge_alloc.json\\): out of memory \\(std::bad_alloc\\).*1 passed, 1 failed"
              run ${OUT}/huge_alloc.json ${CASES}/full/uniform.bf16.json --max-bytes 1e30 --max-work 1e30)
endif()
rcts_expect(memory_overflow 2 "memory model: bytes of attention.softmax.output = .* overflows int64"
            memory --config ${OUT}/overflow_config.json)
if(RCTS_LAST_OUTPUT MATCHES " -[0-9]")
  rcts_fail(memory_overflow "printed a negative count:\n${RCTS_LAST_OUTPUT}")
endif()
rcts_expect(memory_realistic 0 "stored \\(one micro-batch\\)" memory --config ${DOCS}/examples/gpt_s4096_tp2_sp.json)
rcts_report()
