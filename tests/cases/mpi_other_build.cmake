# Two ranks of one job running different rcts builds are refused at start, on every
# rank, naming both executables' sha256: the second rank runs a copy of rcts one byte
# longer (same version and commit, another build). MPI, PRE (words separated by '|'), N
# (the process-count flag), RCTS, CASE and OUT are given by tests/cases/trust_tests.cmake.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
get_filename_component(_name ${RCTS} NAME)
file(COPY ${RCTS} DESTINATION ${OUT})  # keeps the execute permission
file(RENAME ${OUT}/${_name} ${OUT}/rcts-other)
file(APPEND ${OUT}/rcts-other "x")
file(SHA256 ${RCTS} sha0)
file(SHA256 ${OUT}/rcts-other sha1)
string(REPLACE "|" ";" pre "${PRE}")
execute_process(COMMAND ${MPI} ${pre} ${N} 1 ${RCTS} list ${CASE} : ${N} 1 ${OUT}/rcts-other list ${CASE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
if(rc MATCHES "timeout")
  message(FATAL_ERROR "did not finish within 60 s (a hang):\n${out}")
endif()
if(rc STREQUAL "0")
  message(FATAL_ERROR "exit status 0: two rcts builds ran one job:\n${out}")
endif()
set(want "the ranks run different rcts builds (sha256 of the executable): rank 0 runs '${sha0}', rank 1 runs '${sha1}' (every rank of a job must run the same one)")
string(FIND "${out}" "${want}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the refusal is not\n  ${want}\noutput:\n${out}")
endif()
# The same job with the same build on both ranks starts.
execute_process(COMMAND ${MPI} ${pre} ${N} 1 ${RCTS} list ${CASE} : ${N} 1 ${RCTS} list ${CASE}
                RESULT_VARIABLE rc2 OUTPUT_VARIABLE out2 ERROR_VARIABLE out2 TIMEOUT 60)
if(NOT rc2 STREQUAL "0")
  message(FATAL_ERROR "one build on both ranks: exit ${rc2}:\n${out2}")
endif()
message(STATUS "refused as expected:\n${out}")
