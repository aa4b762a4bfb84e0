# scripts/regen-golden is all-or-nothing across its world sizes: when the 2-rank pass
# fails (RCTS_TEST_FAIL_WRITE), the golden directory keeps none of the 1-rank pass's
# files; when every pass succeeds, it holds the committed bytes. RCTS_NO_BUILD keeps the
# script from building, RCTS_GOLDEN_DIR points it at a scratch copy.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/golden/cpu)
set(env RCTS_NO_BUILD=1 RCTS_BUILD_DIR=${BUILD} RCTS_GOLDEN_DIR=${OUT}/golden)
set(args ${CASES}/selective/core_attn.bf16.json ${CASES}/parallel/tp2.json)

execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} RCTS_TEST_FAIL_WRITE=parallel.tp2.np2 bash ${SCRIPT} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 120)
if(rc STREQUAL "0" OR rc MATCHES "timeout")
  message(FATAL_ERROR "scripts/regen-golden with a failing 2-rank pass: exit ${rc}:\n${out}")
endif()
file(GLOB_RECURSE written ${OUT}/golden/*)
if(written)
  message(FATAL_ERROR "a failed regen-golden left ${written}:\n${out}")
endif()
file(GLOB left ${OUT}/.*)
if(left)
  message(FATAL_ERROR "staging left behind: ${left}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -E env ${env} bash ${SCRIPT} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "scripts/regen-golden failed (${rc}):\n${out}")
endif()
foreach(f selective.core_attn.bf16.json parallel.tp2.np2.json)
  file(READ ${GOLDEN}/cpu/${f} want)
  file(READ ${OUT}/golden/cpu/${f} have)
  if(NOT have STREQUAL want)
    message(FATAL_ERROR "${f} differs from the committed golden:\n${out}")
  endif()
endforeach()
