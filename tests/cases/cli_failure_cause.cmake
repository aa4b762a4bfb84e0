# A failure points at its cause: with recompute drawing its dropout
# masks from a state that was never restored (mutant no_rng_restore, the compiled-in
# fault closest to "the attention mask drawn late in recompute"), a failing case leads
# with the first divergence in execution order -- the recompute draw of layer 0's
# attention mask in step 0 micro-batch 0, naming stream, seed and offset -- and then
# lists every failing check, the masks before the gradients they break.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
file(READ ${CASES}/full/block.bf16.json case_json)
string(JSON seed GET "${case_json}" config run seed)
math(EXPR mp_seed "${seed} + 2718")  # design §5: model-parallel-rng = seed + 2718 + tp_rank

execute_process(COMMAND ${RCTS} run ${CASES}/full/block.bf16.json --mutant no_rng_restore --json ${OUT}/r.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "the mutant run passed:\n${out}")
endif()
set(lead "\n\\[1/1\\] FAIL full\\.block\\.bf16 [^\n]*\n        first divergence \\(block1\\): step 0 micro-batch 0, recompute dropout draw: recompute draw of layers\\.0\\.attention\\.dropout from 'model-parallel-rng' with seed ${mp_seed} offset [1-9][0-9]* \\(blocks [^\n]*\\), but the forward draw it replays \\(step 0 micro-batch 0\\) used seed ${mp_seed} offset 0 [^\n]* block\\(s\\) late\n")
if(NOT out MATCHES "${lead}")
  message(FATAL_ERROR "the failure does not lead with the recompute draw of layer 0's attention mask:\n${out}")
endif()
string(FIND "${out}" "\n        masks: " masks_at)
string(FIND "${out}" "\n        bitwise: " bitwise_at)
if(masks_at EQUAL -1 OR bitwise_at EQUAL -1 OR NOT masks_at LESS bitwise_at)
  message(FATAL_ERROR "every failing check must be listed, masks before bitwise:\n${out}")
endif()
file(READ ${OUT}/r.json json)
string(JSON reason GET "${json}" cases 0 reason)
if(NOT reason MATCHES "^first divergence \\(block1\\): step 0 micro-batch 0, recompute dropout draw")
  message(FATAL_ERROR "the JSON reason does not lead with the first divergence: ${reason}")
endif()
string(JSON n LENGTH "${json}" cases 0 checks)
math(EXPR last "${n} - 1")
set(placed 0)
foreach(i RANGE ${last})
  string(JSON kind GET "${json}" cases 0 checks ${i} kind)
  string(JSON phase ERROR_VARIABLE none GET "${json}" cases 0 checks ${i} at phase)
  if(kind STREQUAL "masks" AND phase STREQUAL "recompute dropout draw")
    math(EXPR placed "${placed} + 1")
  endif()
endforeach()
if(placed EQUAL 0)
  message(FATAL_ERROR "no failing masks check carries its execution point in the JSON:\n${json}")
endif()

# A case that checks bitwise only still names the draw, not just the gradients; selective
# recompute runs in backward, last layer first.
execute_process(COMMAND ${RCTS} run ${DATA}/bitwise_only.json --mutant no_rng_restore RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc EQUAL 0 OR NOT out MATCHES "\n        first divergence \\(selective_core_attn\\): step 0 micro-batch 0, recompute dropout draw: recompute draw of layers\\.4\\.attention\\.dropout [^\n]*late\n        bitwise: ")
  message(FATAL_ERROR "a bitwise-only failure does not lead with the recompute draw:\n${out}")
endif()
