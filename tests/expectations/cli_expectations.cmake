# rcts run/check --expect, --expect-strict, --update-expectations and rcts matrix end
# to end (docs/expectations.md), on hand-written expectation files (tests/expectations/
# data) over four cases: two that the mutant no_rng_restore breaks (on bitwise and
# masks: a recompute that does not restore the RNG draws other masks, so the gradients
# differ too), one that runs only at 2 ranks and one config_error case.
# -DRCTS=<rcts> -DCASES=<cases/> -DDATA=<data dir> -DOUT=<scratch dir>
include(${CMAKE_CURRENT_LIST_DIR}/../cases/cli_expect.cmake)
file(REMOVE_RECURSE ${OUT})
set(set ${OUT}/cases)
foreach(f full/block.f32 rng/attention_dropout_only gdn/tp2 invalid/cpu_offloading.excludes_pp)
  get_filename_component(dir ${f} DIRECTORY)
  file(COPY ${CASES}/${f}.json DESTINATION ${set}/${dir})
endforeach()
set(mut --mutant no_rng_restore)

# rcts run without --expect writes what it wrote before; with an empty file only the
# expectation keys are added (outside timing, both reports are otherwise identical).
rcts_expect(plain 0 "3 passed, 0 failed, 1 skipped" run ${set} --json ${OUT}/plain.json --junit ${OUT}/plain.xml)
rcts_expect(empty_file 0 "expectations met" run ${set} --expect ${DATA}/empty.json --json ${OUT}/empty.json)
file(READ ${OUT}/plain.json plain)
file(READ ${OUT}/empty.json with)
string(JSON n LENGTH "${with}" cases)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON with REMOVE "${with}" cases ${i} expectation)
endforeach()
foreach(key expectations timing)
  string(JSON with REMOVE "${with}" ${key})
endforeach()
string(JSON plain REMOVE "${plain}" timing)
string(JSON same EQUAL "${plain}" "${with}")
if(NOT same)
  rcts_fail(json_unchanged "the report with --expect differs beyond its expectation keys:\n${plain}\n----\n${with}")
endif()
string(JSON v GET "${plain}" schema_version)
string(JSON e ERROR_VARIABLE none GET "${plain}" expectations)
string(JSON e0 ERROR_VARIABLE none0 GET "${plain}" cases 0 expectation)
if(NOT v EQUAL 1 OR NOT none OR NOT none0)
  rcts_fail(json_plain "the report without --expect changed:\n${plain}")
endif()

# Matched failures exit 0; the 2-rank case is not applicable here.
rcts_expect(expected_fail 0 "2 expected-fail.*1 not-applicable.*expectations met" run ${set} ${mut} --expect
            ${DATA}/mutant.json --json ${OUT}/mutant.json --junit ${OUT}/mutant.xml)
file(READ ${OUT}/mutant.json j)
string(JSON verdict GET "${j}" cases 0 expectation verdict)
string(JSON ok GET "${j}" expectations ok)
string(JSON entry GET "${j}" cases 0 expectation entry)
if(NOT verdict STREQUAL "expected-fail" OR NOT ok STREQUAL "ON" OR NOT entry EQUAL 1)
  rcts_fail(mutant_json "verdict ${verdict}, ok ${ok}, entry ${entry}:\n${j}")
endif()
file(READ ${OUT}/mutant.xml x)
if(NOT x MATCHES "failures=\"0\" errors=\"0\" skipped=\"3\"" OR NOT x MATCHES "<skipped message=\"xfail: expected-fail \\(entry 1")
  rcts_fail(mutant_junit "${x}")
endif()

# Each difference is named and fails the run.
rcts_expect(regression 1 "REGRESSION +full.block.f32: expected to pass, failed \\[bitwise, masks\\].*expectations NOT met"
            run ${set} ${mut} --expect ${DATA}/empty.json --junit ${OUT}/regression.xml)
file(READ ${OUT}/regression.xml x)
if(NOT x MATCHES "<failure type=\"fail\" message=\"regression: expected to pass, failed \\[bitwise, masks\\]")
  rcts_fail(regression_junit "${x}")
endif()
rcts_expect(different 1 "DIFFERENT-FAILURE +rng.attention_dropout_only: expected to fail \\[masks\\] \\(entry 0" run ${set}
            ${mut} --expect ${DATA}/different.json)
# An unexpected pass is a warning, an error under --expect-strict; so is a stale entry.
rcts_expect(unexpected_pass 0 "UNEXPECTED-PASS +full.block.f32: .*remove the entry \\(warning\\).*expectations met" run
            ${set} --expect ${DATA}/mutant.json)
rcts_expect(unexpected_pass_strict 1 "UNEXPECTED-PASS.*expectations NOT met" run ${set} --expect ${DATA}/mutant.json
            --expect-strict)
rcts_expect(stale 0 "STALE-ENTRY +entry 0 \\('rng.no_such_case'\\): matches no case \\(warning\\)" run ${set} --expect
            ${DATA}/stale.json)
rcts_expect(stale_strict 1 "STALE-ENTRY.*expectations NOT met" run ${set} --expect ${DATA}/stale.json --expect-strict)
# A filtered run judges staleness over the cases it selected: an entry for none of them
# is no warning, not even under --expect-strict.
rcts_expect(stale_filtered 0 "strict\n  1 pass, 0 regression, 0 stale-entry\nexpectations met" run ${set} --filter "full.*"
            --expect ${DATA}/stale.json --expect-strict)
# Bad files are refused before anything runs.
rcts_expect(conflict 2 "conflict.json: /entries/0 and /entries/1 conflict: entry 0 \\('rng.\\*'\\) and entry 1 \\('rng.attention_dropout_only'\\) both match case 'rng.attention_dropout_only' at 1 rank"
            run ${set} --expect ${DATA}/conflict.json)
rcts_expect(bad_key 2 "bad_key.json: /entries/0/check = \\[\"masks\"\\]: unknown key 'check'" run ${set} --expect
            ${DATA}/bad_key.json)
rcts_expect(missing_file 2 "nope.json" run ${set} --expect ${OUT}/nope.json)
execute_process(COMMAND ${RCTS} run ${set} --expect-strict RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(rc EQUAL 0 OR NOT "${o}${e}" MATCHES "--expect-strict requires --expect")
  rcts_fail(strict_needs_expect "exit ${rc}: ${o}${e}")
endif()

# --update-expectations writes FILE.new and the diff, never FILE; the proposal is
# refused until its reasons are written.
file(COPY ${DATA}/empty.json DESTINATION ${OUT}/update)
file(SHA256 ${OUT}/update/empty.json before)
rcts_expect(update 1 "wrote .*empty.json.new.*added    full.block.f32: expect fail \\[bitwise, masks\\] \\(regression\\); give the reason.*\\+      \"case\": \"rng.attention_dropout_only\""
            run ${set} ${mut} --expect ${OUT}/update/empty.json --update-expectations)
file(SHA256 ${OUT}/update/empty.json after)
if(NOT before STREQUAL after OR NOT EXISTS ${OUT}/update/empty.json.new)
  rcts_fail(update_files "FILE changed or FILE.new is missing")
endif()
rcts_expect(update_unreviewed 2 "empty.json.new: /entries/0/reason = \"TODO\\(review\\): .*a placeholder left by --update-expectations"
            run ${set} ${mut} --expect ${OUT}/update/empty.json.new)
# An expected failure whose entry names one case gets its signature pinned (the reason
# stands, so the proposal is usable as written); the glob entry is left for a hand edit.
# The pinned file then judges the same run as expected, and needs no further change.
file(COPY ${DATA}/mutant.json DESTINATION ${OUT}/pin)
rcts_expect(update_pin 0 "changed  rng.attention_dropout_only: pinned the signature of its expected failure \\(the reason stands\\).*\\+      \"signature\": \\[.*by hand  entry 1 \\('full.block.\\*'\\): pins no failure signature"
            run ${set} ${mut} --expect ${OUT}/pin/mutant.json --update-expectations)
rcts_expect(update_nothing 0 "2 expected-fail.*expectations met.*needs no change; nothing written" run ${set} ${mut}
            --expect ${OUT}/pin/mutant.json.new --update-expectations)

# rcts check --expect: every selected case gets a result; an adapter's SKIPPED marker
# gives the skip its reason; a case neither dumped nor marked is an unexpected skip.
rcts_expect(dump 0 "" run ${set}/rng/attention_dropout_only.json --dump ${OUT}/dumps)
file(WRITE ${OUT}/dumps/full.block.f32/SKIPPED "the implementation cannot express block recompute\n")
rcts_expect(check_expected_skip 0 "expectations met" check ${OUT}/dumps --cases ${set} --expect ${DATA}/check_skip.json
            --json ${OUT}/check.json)
file(READ ${OUT}/check.json j)
string(JSON n LENGTH "${j}" cases)
set(seen "")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON id GET "${j}" cases ${i} id)
  string(JSON verdict GET "${j}" cases ${i} expectation verdict)
  string(JSON reason GET "${j}" cases ${i} reason)
  list(APPEND seen "${id}=${verdict}")
  if(id STREQUAL "full.block.f32" AND NOT reason STREQUAL "skipped by the implementation: the implementation cannot express block recompute")
    rcts_fail(check_marker_reason "${reason}")
  endif()
endforeach()
list(SORT seen)
set(want "full.block.f32=expected-skip;gdn.tp2=not-applicable;invalid.cpu_offloading.excludes_pp=not-applicable;rng.attention_dropout_only=pass")
if(NOT "${seen}" STREQUAL "${want}")
  rcts_fail(check_verdicts "got ${seen}\nwant ${want}")
endif()
rcts_expect(check_unexpected_skip 1 "UNEXPECTED-SKIP +full.block.f32: expected to pass, skipped: skipped by the implementation"
            check ${OUT}/dumps --cases ${set} --expect ${DATA}/empty.json)
file(REMOVE ${OUT}/dumps/full.block.f32/SKIPPED)
rcts_expect(check_not_dumped 1 "UNEXPECTED-SKIP +full.block.f32: expected to pass, skipped: not dumped: no dump of this case below"
            check ${OUT}/dumps --cases ${set} --expect ${DATA}/empty.json)
# A skip for another reason than its entry's is a regression, not the expected skip.
file(WRITE ${OUT}/dumps/full.block.f32/SKIPPED "raised TypeError in the adapter's seeding\n")
rcts_expect(check_skip_other_reason 1 "REGRESSION +full.block.f32.*skipped for another: skipped by the implementation: raised TypeError"
            check ${OUT}/dumps --cases ${set} --expect ${DATA}/check_skip.json)
file(REMOVE ${OUT}/dumps/full.block.f32/SKIPPED)
# An ERRORED marker (the framework raised): an error, which only an "error" entry whose
# pattern matches the message expects; a skip entry never absorbs it.
file(WRITE ${OUT}/dumps/full.block.f32/ERRORED "run 'full': IndexError: list index out of range at core/block.py:9\n")
rcts_expect(check_raised_expected 0 "1 expected-error.*expectations met" check ${OUT}/dumps --cases ${set}
            --expect ${DATA}/check_error.json)
rcts_expect(check_raised_no_entry 1 "REGRESSION +full.block.f32.*expected to pass, errored: the implementation raised: run 'full': IndexError"
            check ${OUT}/dumps --cases ${set} --expect ${DATA}/empty.json)
rcts_expect(check_raised_under_skip 1 "REGRESSION +full.block.f32.*ran and errored: the implementation raised"
            check ${OUT}/dumps --cases ${set} --expect ${DATA}/check_skip.json)
file(WRITE ${OUT}/dumps/full.block.f32/ERRORED "run 'full': TypeError: seed\n")
rcts_expect(check_raised_otherwise 1 "DIFFERENT-FAILURE +full.block.f32.*errored: the implementation raised: run 'full': TypeError"
            check ${OUT}/dumps --cases ${set} --expect ${DATA}/check_error.json)
file(WRITE ${OUT}/dumps/full.block.f32/SKIPPED "cannot express it\n")
rcts_expect(check_two_markers 2 "has a second marker.*either skipped a case or raised in it" check ${OUT}/dumps
            --cases ${set} --expect ${DATA}/empty.json)
file(REMOVE ${OUT}/dumps/full.block.f32/SKIPPED ${OUT}/dumps/full.block.f32/ERRORED)
file(WRITE ${OUT}/dumps/no_such_case/SKIPPED "why\n")
rcts_expect(check_marker_unknown 2 "no_such_case/SKIPPED: a skip marker in 'no_such_case', which names no case" check
            ${OUT}/dumps --cases ${set} --expect ${DATA}/empty.json)
# Without --expect rcts check is as before: only the dumped case.
rcts_expect(check_plain 0 "1 passed, 0 failed, 0 skipped" check ${OUT}/dumps --cases ${set})

# rcts matrix over the reports above: a column per report, the verdicts in the cells.
rcts_expect(matrix 0 "" matrix ${OUT}/plain.json mutant=${OUT}/mutant.json --markdown ${OUT}/matrix.md --html ${OUT}/matrix.html)
file(READ ${OUT}/matrix.md md)
foreach(want "| case | cpu np1 | mutant |" "| `full.block.f32` | pass | expected-fail: bitwise, masks [1] |"
        "| `gdn.tp2` | skip: needs 2 ranks, this run has 1 | skip: needs 2 ranks, this run has 1 |")
  string(FIND "${md}" "${want}" at)
  if(at LESS 0)
    rcts_fail(matrix_markdown "no '${want}' in:\n${md}")
  endif()
endforeach()
rcts_expect(matrix_stdout 0 "\\| `rng.attention_dropout_only` \\| pass \\|" matrix ${OUT}/plain.json)
rcts_expect(matrix_same_label 2 "column 'cpu np1' is also .*plain.json's: name them apart with LABEL=FILE" matrix
            ${OUT}/plain.json ${OUT}/plain.json)
rcts_expect(matrix_not_results 2 "mutant.json: /format = \"rcts-expectations\": .*|missing key 'schema'" matrix
            ${DATA}/mutant.json)
rcts_report()
