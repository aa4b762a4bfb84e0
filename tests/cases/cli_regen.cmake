# regen-golden is all-or-nothing per invocation: it writes exactly the committed bytes,
# refuses to write a golden for a case whose other checks fail, writes nothing when one
# write fails (RCTS_TEST_FAIL_WRITE: the writer of a matching path fails half-way) and
# repairs a truncated golden.
file(REMOVE_RECURSE ${OUT})
set(bf16 selective.core_attn.bf16)
set(f32 selective.core_attn.f32)
file(READ ${GOLDEN}/cpu/${bf16}.json committed)

function(regen expect_ok)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 60)
  if(rc MATCHES "timeout" OR (expect_ok AND NOT rc EQUAL 0) OR (NOT expect_ok AND rc STREQUAL "0"))
    message(FATAL_ERROR "regen-golden exit ${rc} (expected ${expect_ok}):\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect_file path want)
  file(READ ${path} have)
  if(NOT have STREQUAL want)
    message(FATAL_ERROR "${path} does not hold the expected bytes")
  endif()
endfunction()

function(expect_no_hidden dir)
  file(GLOB left ${dir}/.*)
  if(left)
    message(FATAL_ERROR "temporary files left: ${left}")
  endif()
endfunction()

# A new golden: the committed bytes.
regen(TRUE ${RCTS} regen-golden ${CASES}/selective/core_attn.bf16.json --golden-dir ${OUT}/new)
if(NOT out MATCHES "new +[^\n]*${bf16}.json" OR NOT out MATCHES "1 golden file\\(s\\) written")
  message(FATAL_ERROR "regen-golden does not report the new file:\n${out}")
endif()
expect_file(${OUT}/new/cpu/${bf16}.json "${committed}")

# One of two writes fails: neither golden changes, no temporary file stays.
string(REGEX REPLACE "\"0x[0-9a-f]+\"" "\"0x0000000000000000\"" stale "${committed}")
file(WRITE ${OUT}/fail/cpu/${bf16}.json "${stale}")
regen(FALSE ${CMAKE_COMMAND} -E env RCTS_TEST_FAIL_WRITE=${f32}.json
      ${RCTS} regen-golden ${CASES} --filter "selective.core_attn.*" --golden-dir ${OUT}/fail)
if(NOT out MATCHES "${f32}.json")
  message(FATAL_ERROR "the failure does not name the file:\n${out}")
endif()
expect_file(${OUT}/fail/cpu/${bf16}.json "${stale}")
if(EXISTS ${OUT}/fail/cpu/${f32}.json)
  message(FATAL_ERROR "${f32}.json was written although the set failed")
endif()
expect_no_hidden(${OUT}/fail/cpu)

# A case whose memory check fails gets no golden.
regen(FALSE ${RCTS} regen-golden ${BAD}/golden_failing_check.json --golden-dir ${OUT}/refuse)
if(NOT out MATCHES "refus" OR NOT out MATCHES "bad.golden_over_budget")
  message(FATAL_ERROR "regen-golden does not say it refuses the failing case:\n${out}")
endif()
file(GLOB_RECURSE written ${OUT}/refuse/*)
if(written)
  message(FATAL_ERROR "regen-golden wrote ${written} for a failing case")
endif()

# A truncated golden (a full disk under an older regen) is replaced.
string(SUBSTRING "${committed}" 0 200 truncated)
file(WRITE ${OUT}/repair/cpu/${bf16}.json "${truncated}")
regen(TRUE ${RCTS} regen-golden ${CASES}/selective/core_attn.bf16.json --golden-dir ${OUT}/repair)
expect_file(${OUT}/repair/cpu/${bf16}.json "${committed}")
expect_no_hidden(${OUT}/repair/cpu)
