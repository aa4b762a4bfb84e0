# --dump under mpiexec: rank 0 prepares one staging directory that every rank writes
# into and renames it into place at the end; a non-empty DIR is refused on every rank.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/d)
file(WRITE ${OUT}/d/stale.npy "old\n")
string(REPLACE "|" ";" mpi "${MPI}")
execute_process(COMMAND ${mpi} ${RCTS} run ${CASE} --dump ${OUT}/d RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out TIMEOUT 60)
if(rc STREQUAL "0" OR rc MATCHES "timeout" OR NOT out MATCHES "not empty")
  message(FATAL_ERROR "--dump into a non-empty directory under mpiexec: exit ${rc}:\n${out}")
endif()
execute_process(COMMAND ${mpi} ${RCTS} run ${CASE} --dump ${OUT}/d --dump-replace RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--dump-replace under mpiexec failed (${rc}):\n${out}")
endif()
foreach(r 0 1)
  file(GLOB have RELATIVE ${OUT}/d/parallel.tp2/cpu/rank${r} ${OUT}/d/parallel.tp2/cpu/rank${r}/*)
  list(SORT have)
  if(NOT "${have}" STREQUAL "baseline;block2;core_attn;mlp_layernorm;uniform1")
    message(FATAL_ERROR "rank ${r}'s dump holds '${have}', expected one directory per run")
  endif()
  if(NOT EXISTS ${OUT}/d/parallel.tp2/cpu/rank${r}/baseline/dump.json)
    message(FATAL_ERROR "rank ${r} wrote no dump.json")
  endif()
endforeach()
file(GLOB left ${OUT}/.*)
if(left)
  message(FATAL_ERROR "staging directories left beside the dump: ${left}")
endif()

# rcts check over the two ranks' dumps: under mpiexec each rank judges its own dumps
# (masks_across_ranks compares them); without it, the check says how to run it.
execute_process(COMMAND ${mpi} ${RCTS} check ${OUT}/d --cases ${CASE} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT out MATCHES "1 passed, 0 failed")
  message(FATAL_ERROR "rcts check under mpiexec over the 2-rank dumps: exit ${rc}:\n${out}")
endif()
execute_process(COMMAND ${RCTS} check ${OUT}/d --cases ${CASE} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE out TIMEOUT 60)
if(rc EQUAL 0 OR NOT out MATCHES "mpirun -n 2")
  message(FATAL_ERROR "rcts check on one rank over 2-rank dumps: exit ${rc}:\n${out}")
endif()
