# scripts/conformance end to end on a tiny case set (data/conformance_e2e): a
# single-rank case that passes, a two-rank case that passes and one that fails. The
# script must run world sizes 1 and 2 (the second under mpirun), print one merged summary
# (a row per world size, a total, the failing case with its first divergence), write
# one merged JSON and JUnit, show a case counter on stderr, and exit 1. Then --ranks 1
# alone passes, and without an MPI launcher world size 2 is one skip line, not a failure.
# -DSRC=<source tree> -DBUILD=<build tree> -DOUT=<scratch dir>
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(cases ${SRC}/tests/cases/data/conformance_e2e)
set(problems "")
function(expect what text regex)
  if(NOT text MATCHES "${regex}")
    string(APPEND problems "${what}: no match for '${regex}'\n")
    set(problems "${problems}" PARENT_SCOPE)
  endif()
endfunction()
function(conformance tag)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env RCTS_NO_BUILD=1 RCTS_BUILD_DIR=${BUILD} RCTS_LOG_DIR=${OUT}/logs-${tag} ${ENVS}
                          bash ${SRC}/scripts/conformance --cases ${cases} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 240)
  set(${tag}_rc "${rc}" PARENT_SCOPE)
  set(${tag}_out "${out}" PARENT_SCOPE)
  set(${tag}_err "${err}" PARENT_SCOPE)
  file(WRITE ${OUT}/${tag}.txt "exit ${rc}\n-- stdout\n${out}\n-- stderr\n${err}\n")
endfunction()

# 1. Every world size, one of them failing.
conformance(all --json ${OUT}/merged.json --junit ${OUT}/merged.xml)
if(NOT all_rc EQUAL 1)
  string(APPEND problems "all: exit ${all_rc}, expected 1 (a case failed at world size 2)\n")
endif()
expect("all: world size 1 row" "${all_out}" "\n +1 +1 +0 +0 +[0-9.]+\n")
expect("all: world size 2 row" "${all_out}" "\n +2 +1 +1 +0 +[0-9.]+\n")
expect("all: total row" "${all_out}" "\n +total +2 +1 +0 +[0-9.]+\n")
expect("all: the failing case" "${all_out}" "\nFAIL e2e\\.tp2_fail \\[cpu, np2\\]  [^\n]*tp2_fail\\.json\n")
expect("all: its first divergence" "${all_out}" "\n        rank 0: first divergence \\(other_seed\\): [^\n]*dropout draw")
expect("all: the last line" "${all_out}" "\n2 passed, 1 failed, 0 skipped at world size\\(s\\) 1, 2\n$")
if(all_out MATCHES "e2e\\.tp2 \\[|FAIL e2e\\.single")
  string(APPEND problems "all: a passing case is listed as failing\n")
endif()
expect("all: the counter on stderr" "${all_err}" "rcts: np2 \\[2/2\\] done in [0-9]+:[0-9][0-9]")
expect("all: mpirun for world size 2" "${all_err}" "world size 2: 2 case file\\(s\\) under mpi(run|exec) -np 2")

file(READ ${OUT}/merged.json json)
string(JSON schema GET "${json}" schema)
string(JSON passed GET "${json}" summary passed)
string(JSON failed GET "${json}" summary failed)
string(JSON sizes LENGTH "${json}" world_sizes)
string(JSON runs LENGTH "${json}" runs)
string(JSON r1 GET "${json}" runs 0 header ranks)
string(JSON r2 GET "${json}" runs 1 header ranks)
string(JSON fail_id GET "${json}" runs 1 cases 1 id)
string(JSON fail_outcome GET "${json}" runs 1 cases 1 outcome)
set(got "${schema} passed=${passed} failed=${failed} sizes=${sizes} runs=${runs} ranks=${r1},${r2} ${fail_id}=${fail_outcome}")
if(NOT got STREQUAL "rcts-conformance passed=2 failed=1 sizes=2 runs=2 ranks=1,2 e2e.tp2_fail=fail")
  string(APPEND problems "merged JSON: ${got}\n")
endif()
file(READ ${OUT}/merged.xml xml)
expect("JUnit: the suites" "${xml}" "<testsuites name=\"rcts\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\"")
expect("JUnit: np1" "${xml}" "<testsuite name=\"rcts.np1\"")
expect("JUnit: np2" "${xml}" "<testsuite name=\"rcts.np2\"")
expect("JUnit: the failure" "${xml}" "name=\"e2e.tp2_fail \\[cpu, np2\\]\"[^\n]*>\n      <failure")

# 2. One world size: only its row, and it passes.
conformance(one --ranks 1)
if(NOT one_rc EQUAL 0)
  string(APPEND problems "--ranks 1: exit ${one_rc}, expected 0\n")
endif()
expect("--ranks 1: the last line" "${one_out}" "\n1 passed, 0 failed, 0 skipped at world size\\(s\\) 1\n$")

# 3. No MPI launcher: world size 2 is a skip with the reason, not a failure.
set(ENVS RCTS_MPIEXEC=${OUT}/no-such-mpirun)
conformance(nompi)
set(ENVS "")
if(NOT nompi_rc EQUAL 0)
  string(APPEND problems "no MPI: exit ${nompi_rc}, expected 0\n")
endif()
expect("no MPI: the row" "${nompi_out}" "\n +2  not run: [^\n]*install Open MPI")
expect("no MPI: the skip line" "${nompi_err}" "rcts: world size\\(s\\) 2 skipped: ")

if(problems)
  message(FATAL_ERROR "${problems}(outputs in ${OUT}/*.txt)\n-- all: stdout\n${all_out}\n-- all: stderr\n${all_err}")
endif()
message(STATUS "scripts/conformance merged world sizes 1 and 2:\n${all_out}")
