# CLI tests of what a user and CI see: provenance, CI reports, machine-
# readable list/explain/block, regen-golden review, failures that point at the cause.
# Included from tests/cases/CMakeLists.txt; label cli.
add_test(NAME cli.ci_reports COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DSRC=${PROJECT_SOURCE_DIR}
         -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_ci_reports -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_ci_reports.cmake)
add_test(NAME cli.provenance COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DSRC=${PROJECT_SOURCE_DIR}
         -DCASES=${RCTS_CASES} -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_provenance
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_provenance.cmake)
set_tests_properties(cli.ci_reports cli.provenance PROPERTIES LABELS cli TIMEOUT 120)
add_test(NAME cli.failure_cause COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DCASES=${RCTS_CASES}
         -DDATA=${CMAKE_CURRENT_SOURCE_DIR}/data -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_failure_cause
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_failure_cause.cmake)
set_tests_properties(cli.failure_cause PROPERTIES LABELS cli TIMEOUT 120)
add_test(NAME cli.regen_review COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DCASES=${RCTS_CASES}
         -DGOLDEN=${PROJECT_SOURCE_DIR}/golden -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_regen_review
         -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_regen_review.cmake)
set_tests_properties(cli.regen_review PROPERTIES LABELS cli TIMEOUT 120)
add_test(NAME cli.json_outputs COMMAND ${CMAKE_COMMAND} -DRCTS=${RCTS_CLI} -DCASES=${RCTS_CASES}
         -DOUT=${CMAKE_CURRENT_BINARY_DIR}/cli_json_outputs -P ${CMAKE_CURRENT_SOURCE_DIR}/cli_json_outputs.cmake)
set_tests_properties(cli.json_outputs PROPERTIES LABELS cli TIMEOUT 120)
# Multi-rank: a seed only rank 1 gets wrong leads rank 0's report (label mpi).
if(RCTS_HAVE_MPI)
  add_test(NAME mpi.failure_cause.np2
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${_preflags} ${RCTS_CLI} run ${RCTS_CASES}/parallel/tp2.json
                   --mutant tp_seed_without_rank ${MPIEXEC_POSTFLAGS})
  set_tests_properties(mpi.failure_cause.np2 PROPERTIES LABELS mpi PROCESSORS 2 TIMEOUT 120
    PASS_REGULAR_EXPRESSION "FAIL parallel\\.tp2 [^\n]*\n        rank 1: first divergence \\(baseline\\): RNG seeding: 'model-parallel-rng' seeded seed=[0-9]+ offset=0, design §5 says seed=[0-9]+ offset=0 for tp_rank 1")
endif()
