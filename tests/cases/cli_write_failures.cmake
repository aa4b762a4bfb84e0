# Every output is checked and replaced whole: a failed write (RCTS_TEST_FAIL_WRITE makes
# the writer of a matching path fail half-way, as a full disk would) exits non-zero and
# leaves the previous file as it was, with no temporary file behind; --dump never mixes
# a new dump into an old one.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(one ${CASES}/selective/core_attn.bf16.json)

function(expect_fail what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
  if(rc STREQUAL "0" OR rc MATCHES "timeout")
    message(FATAL_ERROR "${what}: expected a failure, got exit ${rc}:\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect_only dir)  # the directory holds exactly the given names (hidden ones included)
  file(GLOB have RELATIVE ${dir} ${dir}/* ${dir}/.*)
  list(SORT have)
  set(want ${ARGN})
  list(SORT want)
  if(NOT "${have}" STREQUAL "${want}")
    message(FATAL_ERROR "${dir} holds '${have}', expected '${want}'")
  endif()
endfunction()

# JSON report: the previous file survives a failed write.
file(WRITE ${OUT}/r.json "previous\n")
expect_fail("--json with a failing write" ${CMAKE_COMMAND} -E env RCTS_TEST_FAIL_WRITE=r.json ${RCTS} run ${one} --json ${OUT}/r.json)
if(NOT out MATCHES "r.json")
  message(FATAL_ERROR "the failure does not name the file:\n${out}")
endif()
file(READ ${OUT}/r.json kept)
if(NOT kept STREQUAL "previous\n")
  message(FATAL_ERROR "a failed write changed r.json to:\n${kept}")
endif()
expect_only(${OUT} r.json)

# A dump whose manifest cannot be written fails the run.
expect_fail("--dump with a failing write" ${CMAKE_COMMAND} -E env RCTS_TEST_FAIL_WRITE=dump.json ${RCTS} run ${one} --dump ${OUT}/dump)
if(NOT out MATCHES "dump.json")
  message(FATAL_ERROR "the failure does not name dump.json:\n${out}")
endif()

# --dump into a non-empty directory refuses and touches nothing ...
file(MAKE_DIRECTORY ${OUT}/d)
file(WRITE ${OUT}/d/stale.npy "old\n")
expect_fail("--dump into a non-empty directory" ${RCTS} run ${one} --dump ${OUT}/d)
if(NOT out MATCHES "not empty" OR NOT out MATCHES "--dump-replace")
  message(FATAL_ERROR "the refusal does not say why or how to override:\n${out}")
endif()
expect_only(${OUT}/d stale.npy)
# ... unless told to replace it: then the old files are gone and nothing is left beside it.
execute_process(COMMAND ${RCTS} run ${one} --dump ${OUT}/d --dump-replace RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "--dump-replace failed (${rc}):\n${out}")
endif()
expect_only(${OUT}/d selective.core_attn.bf16)
if(NOT EXISTS ${OUT}/d/selective.core_attn.bf16/cpu/rank0/baseline/dump.json)
  message(FATAL_ERROR "--dump-replace wrote no dump.json")
endif()
file(GLOB left ${OUT}/.*)
if(left)
  message(FATAL_ERROR "staging directories left beside the dump: ${left}")
endif()
