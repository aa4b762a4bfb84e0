# Cases are discovered when ctest runs: a case file added to a case
# set becomes a test at once, named after its id, with a TIMEOUT, and runs, with no
# rebuild and no re-configure. The case set is a scratch copy pointed at with
# RCTS_CTEST_CASES (the source tree's cases/ stays untouched). A case set that does not
# load is one failing test, not a ctest that cannot start.
# -DBUILD=<build tree> -DCASES=<cases/> -DOUT=<scratch dir>
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/cases)
file(COPY ${CASES}/full/uniform.bf16.json DESTINATION ${OUT}/cases)

function(list_tests labels out_names)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env RCTS_CTEST_CASES=${OUT}/cases
                          ${CMAKE_CTEST_COMMAND} --test-dir ${BUILD} -N ${labels}
                  OUTPUT_VARIABLE listing ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest -N failed (${rc}):\n${listing}\n${err}")
  endif()
  string(REGEX MATCHALL "Test +#[0-9]+: [^\n]+" lines "${listing}")
  set(names "")
  foreach(l IN LISTS lines)
    string(REGEX REPLACE "Test +#[0-9]+: " "" n "${l}")
    list(APPEND names "${n}")
  endforeach()
  set(${out_names} "${names}" PARENT_SCOPE)
endfunction()

list_tests("-L;^conformance$" before)
list(LENGTH before n_before)
if(NOT "conformance.full.uniform.bf16" IN_LIST before)
  message(FATAL_ERROR "the copied case is not the test conformance.full.uniform.bf16: ${before}")
endif()

# A new case, as a user writes it: no build step between writing it and ctest.
file(WRITE ${OUT}/cases/added.json [=[
{"id": "scratch.added", "description": "a case added after the build",
 "config": {"model": {"num_layers": 2, "hidden_size": 16, "num_attention_heads": 2, "seq_length": 4,
                      "ffn_hidden_size": 32}},
 "variants": [{"name": "full", "config": {"recompute": {"recompute_granularity": "full",
               "recompute_method": "uniform", "recompute_num_layers": 1}},
               "expect": {"counts": {"layers.*": {"original": 1, "recompute": 1}}}}],
 "expect": {"bitwise": true}}
]=])
list_tests("-L;^conformance$" after)
list(LENGTH after n_after)
math(EXPR grown "${n_after} - ${n_before}")
if(NOT grown EQUAL 1 OR NOT "conformance.scratch.added" IN_LIST after)
  message(FATAL_ERROR "adding a case gave ${grown} more conformance tests (want 1, conformance.scratch.added):\n"
                      "before: ${before}\nafter: ${after}")
endif()

# It runs (a real pass of the new case) and carries a timeout.
execute_process(COMMAND ${CMAKE_COMMAND} -E env RCTS_CTEST_CASES=${OUT}/cases
                        ${CMAKE_CTEST_COMMAND} --test-dir ${BUILD} -R "^conformance\\.scratch\\.added$"
                        --output-on-failure
                OUTPUT_VARIABLE ran ERROR_VARIABLE ran RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT ran MATCHES "100% tests passed, 0 tests failed out of 1")
  message(FATAL_ERROR "the added case did not run and pass under ctest:\n${ran}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env RCTS_CTEST_CASES=${OUT}/cases
                        ${CMAKE_CTEST_COMMAND} --test-dir ${BUILD} -N -R "^conformance\\.scratch\\.added$"
                        --show-only=json-v1
                OUTPUT_VARIABLE json RESULT_VARIABLE rc)
string(JSON n_tests LENGTH "${json}" tests)
string(JSON props GET "${json}" tests 0 properties)
if(NOT n_tests EQUAL 1 OR NOT props MATCHES "\"TIMEOUT\"")
  message(FATAL_ERROR "conformance.scratch.added has no TIMEOUT: ${props}")
endif()

# Every case test of the real case set (and the whole-set runs) has a TIMEOUT.
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${BUILD} -N -L "^(conformance|golden|mpi)$" --show-only=json-v1
                OUTPUT_VARIABLE json RESULT_VARIABLE rc)
string(JSON n_tests LENGTH "${json}" tests)
math(EXPR last "${n_tests} - 1")
set(untimed "")
foreach(i RANGE ${last})
  string(JSON props GET "${json}" tests ${i} properties)
  if(NOT props MATCHES "\"TIMEOUT\"")
    string(JSON name GET "${json}" tests ${i} name)
    list(APPEND untimed ${name})
  endif()
endforeach()
if(n_tests LESS 100 OR untimed)
  message(FATAL_ERROR "of ${n_tests} case tests, these have no TIMEOUT: ${untimed}")
endif()

# A case set that does not load: one failing test that says why.
file(WRITE ${OUT}/cases/broken.json "{\"id\": \"scratch.broken\", \"descripton\": 1}")
list_tests("-L;^conformance$" broken)
if(NOT "conformance.load_cases" IN_LIST broken)
  message(FATAL_ERROR "a case set that does not load gave no conformance.load_cases test: ${broken}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env RCTS_CTEST_CASES=${OUT}/cases
                        ${CMAKE_CTEST_COMMAND} --test-dir ${BUILD} -R "^conformance\\.load_cases$" --output-on-failure
                OUTPUT_VARIABLE ran ERROR_VARIABLE ran RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT ran MATCHES "broken.json")
  message(FATAL_ERROR "conformance.load_cases did not fail naming broken.json:\n${ran}")
endif()
message(STATUS "discovered at test time: ${n_before} -> ${n_after} conformance tests; conformance.scratch.added ran")
