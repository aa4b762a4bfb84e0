# CLI tests for failures that must be loud (included from tests/cases/CMakeLists.txt):
# every write is checked (label cli), regen-golden is all-or-nothing (label cli), and
# multi-rank runs whose ranks disagree or fail alone end promptly on every rank with
# the failing rank's message (label mpi). Each runs under expect_exit.cmake or a
# script with its own time limit, so a hang is a failure rather than a stuck suite.
set(_expect ${CMAKE_CURRENT_SOURCE_DIR}/expect_exit.cmake)
set(_tp2 ${RCTS_CASES}/parallel/tp2.json)
set(_one ${RCTS_CASES}/selective/core_attn.bf16.json)

# rcts_expect_failure(<name> <labels> <regexes separated by @@> <command...>)
function(rcts_expect_failure name labels expect)
  string(JOIN "|" _cmd ${ARGN})
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} "-DCMD=${_cmd}" "-DEXPECT=${expect}" -DLIMIT=60 -P ${_expect}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT 90)
endfunction()

# Writes: a full device and a path whose parent is a file fail with the path and the OS error.
rcts_expect_failure(cli.write.json_dev_full cli "/dev/full@@No space left on device"
                    ${RCTS_CLI} run ${_one} --json /dev/full)
rcts_expect_failure(cli.write.junit_dev_full cli "/dev/full@@No space left on device"
                    ${RCTS_CLI} run ${_one} --junit /dev/full)
rcts_expect_failure(cli.write.json_parent_is_a_file cli "README.md/r.json@@Not a directory"
                    ${RCTS_CLI} run ${_one} --json ${PROJECT_SOURCE_DIR}/README.md/r.json)
rcts_expect_failure(cli.regen.filter_matches_nothing cli "no case matches --filter 'typo'"
                    ${RCTS_CLI} regen-golden ${RCTS_CASES} --filter typo --golden-dir ${CMAKE_CURRENT_BINARY_DIR}/regen_typo)
add_test(NAME cli.write.injected_failures COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DCASES=${RCTS_CASES}
         -DBAD=${CMAKE_CURRENT_SOURCE_DIR}/bad -DGOLDEN=${PROJECT_SOURCE_DIR}/golden
         -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_writes -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_write_failures.cmake)
add_test(NAME cli.regen.all_or_nothing COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DCASES=${RCTS_CASES}
         -DBAD=${CMAKE_CURRENT_SOURCE_DIR}/bad -DGOLDEN=${PROJECT_SOURCE_DIR}/golden
         -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_regen -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_regen.cmake)
set_tests_properties(cli.write.injected_failures cli.regen.all_or_nothing PROPERTIES LABELS cli TIMEOUT 120)

if(RCTS_HAVE_MPI)
  set(_mpi ${MPIEXEC_EXECUTABLE})
  set(_pre ${MPIEXEC_PREFLAGS})
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _ver ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _ver MATCHES "Open MPI|OpenRTE")
    list(APPEND _pre --allow-run-as-root --oversubscribe)
  endif()
  set(_n ${MPIEXEC_NUMPROC_FLAG})
  set(_bad ${CMAKE_CURRENT_SOURCE_DIR}/mpi_disagree)
  # MPMD: rank 0 and rank 1 get different command lines.
  rcts_expect_failure(mpi.agree.missing_case_file mpi "rank 1: missing.json: no such case file"
                      ${_mpi} ${_pre} ${_n} 1 ${RCTS_CLI} run ${_tp2} : ${_n} 1 ${RCTS_CLI} run missing.json)
  rcts_expect_failure(mpi.agree.invalid_variant_on_one_rank mpi "ERROR parallel.tp2@@rank 1: .*recompute_num_layers = 5"
                      ${_mpi} ${_pre} ${_n} 1 ${RCTS_CLI} run ${_tp2} : ${_n} 1 ${RCTS_CLI} run ${_bad}/tp2_bad_variant.json)
  rcts_expect_failure(mpi.agree.layer_counts_differ mpi "ERROR parallel.tp2@@rank 1 .*/model/num_layers: 3 on rank 0, 4 on rank 1"
                      ${_mpi} ${_pre} ${_n} 1 ${RCTS_CLI} run ${_tp2} : ${_n} 1 ${RCTS_CLI} run ${_bad}/tp2_four_layers.json)
  rcts_expect_failure(mpi.agree.case_sets_differ mpi "different case sets@@parallel.tp2_sp"
                      ${_mpi} ${_pre} ${_n} 1 ${RCTS_CLI} run ${_tp2} : ${_n} 1 ${RCTS_CLI} run ${_tp2}
                      ${RCTS_CASES}/parallel/tp2_sp.json)
  rcts_expect_failure(mpi.agree.commands_differ mpi "rank 1 runs 'rcts list'"
                      ${_mpi} ${_pre} ${_n} 1 ${RCTS_CLI} run ${_tp2} : ${_n} 1 ${RCTS_CLI} list ${_tp2})
  # An exception on one rank while the others wait in a collective of the case: the job
  # is aborted with that rank's message (RCTS_TEST_THROW_ON_RANK is the test hook).
  foreach(_r 0 1)
    rcts_expect_failure(mpi.agree.exception_on_rank${_r} mpi "rank ${_r}: case parallel.tp2: injected failure"
                        ${CMAKE_COMMAND} -E env RCTS_TEST_THROW_ON_RANK=${_r} RCTS_MPI_ERROR_TIMEOUT=2
                        ${_mpi} ${_n} 2 ${_pre} ${RCTS_CLI} run ${_tp2})
  endforeach()
  string(JOIN "|" _mpi2 ${_mpi} ${_n} 2 ${_pre})
  add_test(NAME mpi.dump.staging COMMAND ${CMAKE_COMMAND} "-DMPI=${_mpi2}" -DRCTS=${RCTS_CLI} -DCASE=${_tp2}
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/mpi_dump -P ${CMAKE_CURRENT_SOURCE_DIR}/mpi_dump.cmake)
  set_tests_properties(mpi.dump.staging PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 150)
  # scripts/regen-golden is all-or-nothing across its world sizes.
  add_test(NAME mpi.regen.script_all_or_nothing COMMAND ${CMAKE_COMMAND} -DSCRIPT=${PROJECT_SOURCE_DIR}/scripts/regen-golden
           -DBUILD=${PROJECT_BINARY_DIR} -DCASES=${RCTS_CASES} -DGOLDEN=${PROJECT_SOURCE_DIR}/golden
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/regen_script -P ${CMAKE_CURRENT_SOURCE_DIR}/regen_script.cmake)
  set_tests_properties(mpi.regen.script_all_or_nothing PROPERTIES LABELS "mpi;cli" PROCESSORS 2 TIMEOUT 180)
  set_tests_properties(mpi.agree.missing_case_file mpi.agree.invalid_variant_on_one_rank mpi.agree.layer_counts_differ
                       mpi.agree.case_sets_differ mpi.agree.commands_differ mpi.agree.exception_on_rank0
                       mpi.agree.exception_on_rank1 PROPERTIES PROCESSORS 2)
  # Ranks running two builds of one commit (a copy of rcts one byte longer) are refused at start.
  string(JOIN "|" _pre_words ${_pre})
  add_test(NAME mpi.agree.builds_differ COMMAND ${CMAKE_COMMAND} -DMPI=${_mpi} "-DPRE=${_pre_words}" -DN=${_n}
           -DRCTS=${RCTS_CLI} -DCASE=${_tp2} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/mpi_other_build
           -P ${CMAKE_CURRENT_SOURCE_DIR}/mpi_other_build.cmake WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(mpi.agree.builds_differ PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 150)
endif()
