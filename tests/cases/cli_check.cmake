# rcts check over rcts's own dumps: it judges exactly as rcts run does,
# case by case and check by check; a mutant rcts run kills fails rcts check on the
# mutant's dumps with the same checks; malformed or mismatched dumps are refused with
# an error naming the file and the field.
# PART: "equivalence" (own dumps, then bad dumps) or "mutants": two CTests that run in parallel.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

# "<id>=<outcome>[kind:outcome,...]" per case of a results JSON, into `var`.
function(verdicts json_file var)
  file(READ ${json_file} j)
  string(JSON n LENGTH "${j}" cases)
  set(out "")
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON id GET "${j}" cases ${i} id)
      string(JSON outcome GET "${j}" cases ${i} outcome)
      string(JSON k LENGTH "${j}" cases ${i} checks)
      set(line "${id}=${outcome}[")
      if(k GREATER 0)
        math(EXPR klast "${k} - 1")
        foreach(c RANGE ${klast})
          string(JSON kind GET "${j}" cases ${i} checks ${c} kind)
          string(JSON o GET "${j}" cases ${i} checks ${c} outcome)
          string(APPEND line "${kind}:${o},")
        endforeach()
      endif()
      list(APPEND out "${line}]")
    endforeach()
  endif()
  set(${var} "${out}" PARENT_SCOPE)
endfunction()

if(PART STREQUAL "mutants")
# Mutants rcts run kills on one rank, each with the case that kills it.
foreach(pair no_rng_restore:rng/attention_dropout_only recompute_on_main_stream:rng/attention_dropout_only
             fork_no_write_back:rng/attention_dropout_only rng_replayed_per_micro_batch:rng/attention_dropout_only
             side_effect_twice:rng/attention_dropout_only checkpoint_keeps_intermediates:memory/selective_budget
             uniform_drops_tail:full/uniform.l16_n5 offload_no_margin:offload/link_model
             offload_threshold_bytes:offload/threshold tp_seed_without_rank:rng/seeds.tp3_ep2_etp1
             late_output_recompute:output_discarding/layernorm)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 mutant)
  list(GET pair 1 case)
  set(m ${OUT}/mutant.${mutant})
  execute_process(COMMAND ${RCTS} run ${CASES}/${case}.json --mutant ${mutant} --json ${m}.run.json --dump ${m}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "rcts run does not kill ${mutant} with ${case} (${rc}):\n${out}")
  endif()
  execute_process(COMMAND ${RCTS} check ${m} --cases ${CASES}/${case}.json --json ${m}.check.json
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "rcts check passes the dumps of mutant ${mutant} (${rc}):\n${out}")
  endif()
  verdicts(${m}.run.json ran)
  verdicts(${m}.check.json checked)
  # A run that errors half-way leaves only the dumps before the error: the check then
  # errors on the missing run; otherwise it fails the same checks.
  if(NOT ran MATCHES "=error\\[" AND NOT "${ran}" STREQUAL "${checked}")
    message(FATAL_ERROR "${mutant}: rcts check judged differently:\nrun:   ${ran}\ncheck: ${checked}")
  endif()
  # Against rcts's own (clean) reference the mutant's recompute variant is off.
  if(mutant STREQUAL "no_rng_restore")
    execute_process(COMMAND ${RCTS} check ${m} --cases ${CASES}/${case}.json --reference-tolerance 0
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 1 OR NOT out MATCHES "is outside the tolerance" OR NOT out MATCHES "baseline: against rcts's reference")
      message(FATAL_ERROR "--reference-tolerance 0 over the dumps of ${mutant} (${rc}):\n${out}")
    endif()
  endif()
  # The same dumps declaring neither rcts's arithmetic nor its mask rule (as another
  # implementation's would): the RNG mutants still fail, on the portable checks.
  if(case MATCHES "attention_dropout_only" AND NOT mutant STREQUAL "side_effect_twice")
    file(GLOB_RECURSE manifests ${m}/dump.json)
    foreach(f ${manifests})
      file(READ ${f} j)
      string(JSON j SET "${j}" implementation arithmetic "\"other\"")
      string(JSON j SET "${j}" implementation mask_rule "\"none\"")
      file(WRITE ${f} "${j}")
    endforeach()
    execute_process(COMMAND ${RCTS} check ${m} --cases ${CASES}/${case}.json --json ${m}.portable.json
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    verdicts(${m}.portable.json portable)
    if(NOT rc EQUAL 1 OR NOT portable MATCHES "masks:fail" OR portable MATCHES "golden:(pass|fail)")
      message(FATAL_ERROR "${mutant}: the portable mask check does not fail its dumps (${rc}): ${portable}\n${out}")
    endif()
  endif()
endforeach()

  return()
endif()

# Cases that execute (config_error cases run nothing and dump nothing), across the
# check kinds: bitwise, masks, rng, memory, counts, offload, golden.
set(subset ${CASES}/rng ${CASES}/memory/equation1.bf16.json ${CASES}/memory/no_dropout.json
    ${CASES}/memory/selective_budget.json ${CASES}/selective/core_attn.bf16.json ${CASES}/output_discarding/layernorm.json
    ${CASES}/full/uniform.l16_n5.json ${CASES}/offload/link_model.json ${CASES}/moe/topk_all_experts.json)
execute_process(COMMAND ${RCTS} run ${subset} --json ${OUT}/run.json --dump ${OUT}/d RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rcts run --dump failed (${rc}):\n${out}")
endif()
execute_process(COMMAND ${RCTS} check ${OUT}/d --cases ${subset} --json ${OUT}/check.json --junit ${OUT}/check.xml
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rcts check over rcts's own dumps failed (${rc}):\n${out}")
endif()
verdicts(${OUT}/run.json ran)
verdicts(${OUT}/check.json checked)
list(FILTER ran EXCLUDE REGEX "=skip\\[")  # skipped cases run nothing, so dump nothing
list(LENGTH ran n_ran)
if(n_ran LESS 11)
  message(FATAL_ERROR "only ${n_ran} cases ran: ${ran}")
endif()
if(NOT "${ran}" STREQUAL "${checked}")
  message(FATAL_ERROR "rcts check judged rcts's own dumps differently from rcts run:\nrun:   ${ran}\ncheck: ${checked}")
endif()
# rcts's reference of its own dumps: zero error on every tensor.
execute_process(COMMAND ${RCTS} check ${OUT}/d/selective.core_attn.bf16 --cases ${CASES}/selective/core_attn.bf16.json
                        --reference-tolerance 0 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "layers.1.mlp.fc2.weight.grad: max abs 0.000e\\+00, rel 0.000e\\+00"
   OR out MATCHES "FAIL ")
  message(FATAL_ERROR "--reference-tolerance 0 over rcts's own dumps (${rc}):\n${out}")
endif()
file(READ ${OUT}/check.xml xml)
if(NOT xml MATCHES "<testsuite" OR NOT xml MATCHES "selective.core_attn.bf16")
  message(FATAL_ERROR "rcts check --junit wrote:\n${xml}")
endif()

# Bad dumps: an error naming the file and the field, never a pass.
function(expect_refused what pattern)
  execute_process(COMMAND ${RCTS} check ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0 OR rc GREATER 2 OR NOT out MATCHES "${pattern}")
    message(FATAL_ERROR "${what}: exit ${rc}, expected an error matching '${pattern}':\n${out}")
  endif()
endfunction()
set(one ${CASES}/selective/core_attn.bf16.json)
set(src ${OUT}/d/selective.core_attn.bf16)
function(fresh_copy name)
  file(REMOVE_RECURSE ${OUT}/${name})
  file(COPY ${src} DESTINATION ${OUT}/${name})
  set(dir ${OUT}/${name}/selective.core_attn.bf16/cpu/rank0/selective_core_attn PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY ${OUT}/empty)
expect_refused("no dump" "empty: holds no dump" ${OUT}/empty)

fresh_copy(version)
file(READ ${dir}/dump.json m)
string(JSON m SET "${m}" version 2)
file(WRITE ${dir}/dump.json "${m}")
expect_refused("wrong version" "selective_core_attn/dump.json: /version = 2: this rcts reads dump format version 1"
               ${OUT}/version --cases ${one})

fresh_copy(missing)
file(READ ${dir}/dump.json m)
string(JSON m REMOVE "${m}" micro_batches 1 target)
file(WRITE ${dir}/dump.json "${m}")
expect_refused("missing field" "dump.json: /micro_batches/1 = .*missing field 'target'" ${OUT}/missing --cases ${one})

fresh_copy(dtype)
file(READ ${dir}/dump.json m)
string(JSON m SET "${m}" micro_batches 0 output dtype "\"f32\"")
file(WRITE ${dir}/dump.json "${m}")
expect_refused("wrong dtype" "/micro_batches/0/output/dtype = \"f32\": tensor file .*holds '<u2'" ${OUT}/dtype --cases ${one})

fresh_copy(shape)
file(READ ${dir}/dump.json m)
string(JSON m SET "${m}" micro_batches 0 output shape 0 7)
file(WRITE ${dir}/dump.json "${m}")
expect_refused("wrong shape" "/micro_batches/0/output/shape = .*has shape" ${OUT}/shape --cases ${one})

fresh_copy(truncated)
file(READ ${dir}/dump.json m)
string(JSON npy GET "${m}" micro_batches 0 input_grad file)
file(READ ${dir}/${npy} bytes HEX)
string(SUBSTRING "${bytes}" 0 300 bytes)  # the header and a few data bytes
file(REMOVE ${dir}/${npy})
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" escaped "${bytes}")
execute_process(COMMAND printf "${escaped}" OUTPUT_FILE ${dir}/${npy})
expect_refused("truncated .npy" "${npy} .*truncated" ${OUT}/truncated --cases ${one})

fresh_copy(config)
file(READ ${dir}/dump.json m)
string(JSON m SET "${m}" config model hidden_dropout 0.25)
file(WRITE ${dir}/dump.json "${m}")
expect_refused("config mismatch" "dump.json: /config/model/hidden_dropout: 0.25, rcts resolves" ${OUT}/config --cases ${one})

fresh_copy(case)
file(READ ${dir}/dump.json m)
string(JSON m SET "${m}" case id "\"selective.core_attn.f32\"")
file(WRITE ${dir}/dump.json "${m}")
expect_refused("case not in the case set" "dump.json: /case/id = \"selective.core_attn.f32\": no such case" ${OUT}/case --cases ${one})
