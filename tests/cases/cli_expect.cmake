# Helpers for the CLI scripts that check many invocations: each check records its
# failure, and rcts_report() fails the script listing all of them, so one run
# shows every broken behaviour. Expects RCTS (the binary) to be set.
set_property(GLOBAL PROPERTY RCTS_FAILURES "")

# rcts_expect(NAME RC REGEX args...): `rcts args...` exits with RC (a crash or a
# timeout never matches) and its stdout + stderr match REGEX.
function(rcts_expect name want_rc regex)
  execute_process(COMMAND ${RCTS} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
  set(all "${out}${err}")
  string(SUBSTRING "${all}" 0 2000 shown)
  string(REPLACE ";" "," shown "${shown}")  # the failure list is a CMake list
  if(NOT rc STREQUAL want_rc)
    set_property(GLOBAL APPEND PROPERTY RCTS_FAILURES "${name}: exit '${rc}', expected ${want_rc}\n${shown}")
  elseif(NOT all MATCHES "${regex}")
    set_property(GLOBAL APPEND PROPERTY RCTS_FAILURES "${name}: output does not match '${regex}'\n${shown}")
  endif()
  set(RCTS_LAST_OUTPUT "${all}" PARENT_SCOPE)
endfunction()

function(rcts_fail name what)
  string(REPLACE ";" "," what "${what}")
  set_property(GLOBAL APPEND PROPERTY RCTS_FAILURES "${name}: ${what}")
endfunction()

function(rcts_report)
  get_property(failures GLOBAL PROPERTY RCTS_FAILURES)
  if(failures)
    list(LENGTH failures n)
    string(REPLACE ";" "\n----\n" text "${failures}")
    message(FATAL_ERROR "${n} check(s) failed:\n${text}")
  endif()
endfunction()
