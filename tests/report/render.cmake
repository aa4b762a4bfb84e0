# `rcts run --report` end to end: the pages and the trace are written, a non-empty
# directory is refused, and (MODE chromium) the page renders in headless Chromium with
# its SVG charts and the hand-derived numbers of tests/report/tiny.json in the DOM
# (1248 bytes per layer, 2496 held at the end of forward) and a non-blank screenshot.
# Without chromium the chromium mode prints "SKIPPED: ..." (the test's skip pattern).
# MODE mpi runs CASE (a two-rank case) under MPIEXEC and checks that its page has a
# section per rank and its trace a process per rank.
# -DRCTS=<rcts> -DCASE=<case.json> -DOUT=<dir> -DMODE=files|chromium|mpi [-DMPIEXEC=... -DMPIFLAGS=...]
file(REMOVE_RECURSE ${OUT})
set(dir ${OUT}/report)
set(page ${dir}/report.tiny.cpu.html)

if(MODE STREQUAL "mpi")
  execute_process(COMMAND ${MPIEXEC} -n 2 ${MPIFLAGS} ${RCTS} run ${CASE} --backend cpu --report ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mpiexec rcts run --report failed (${rc}):\n${out}${err}")
  endif()
  file(GLOB pages ${dir}/*.cpu.html)
  file(GLOB traces ${dir}/*.cpu.trace.json)
  list(LENGTH pages n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one case page, got: ${pages}")
  endif()
  file(READ ${pages} html)
  file(READ ${traces} trace)
  foreach(rank 0 1)
    if(NOT html MATCHES "data-rank='${rank}'" OR NOT trace MATCHES "\"pid\":${rank},")
      message(FATAL_ERROR "rank ${rank} is missing from the page or the trace")
    endif()
  endforeach()
  return()
endif()

if(MODE STREQUAL "chromium")
  find_program(CHROMIUM NAMES chromium chromium-browser)
  if(NOT CHROMIUM)
    message("SKIPPED: chromium is not installed (Debian: apt-get install chromium; scripts/test installs it)")
    return()
  endif()
endif()

execute_process(COMMAND ${RCTS} run ${CASE} --backend cpu --report ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rcts run --report failed (${rc}):\n${out}${err}")
endif()
foreach(f index.html report.tiny.cpu.html report.tiny.cpu.trace.json)
  if(NOT EXISTS ${dir}/${f})
    message(FATAL_ERROR "--report wrote no ${f}")
  endif()
endforeach()

if(MODE STREQUAL "files")
  file(READ ${dir}/report.tiny.cpu.trace.json trace)
  string(JSON n LENGTH "${trace}" traceEvents)
  if(n LESS 10)
    message(FATAL_ERROR "the trace holds only ${n} events")
  endif()
  if(NOT trace MATCHES "\"d2h copy stream\"" OR NOT trace MATCHES "\"cat\":\"offload\"")
    message(FATAL_ERROR "the trace has no offload copies:\n${trace}")
  endif()
  # A second run into the same directory is refused, naming the flag that allows it.
  execute_process(COMMAND ${RCTS} run ${CASE} --backend cpu --report ${dir} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "--report .*not empty.*--report-replace")
    message(FATAL_ERROR "a non-empty --report directory was not refused (${rc}):\n${out}${err}")
  endif()
  execute_process(COMMAND ${RCTS} run ${CASE} --backend cpu --report ${dir} --report-replace RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT EXISTS ${page})
    message(FATAL_ERROR "--report-replace failed (${rc}):\n${out}${err}")
  endif()
  # A page that cannot be written (the disk fills up) fails the run, naming the file;
  # the old report stays.
  execute_process(COMMAND ${CMAKE_COMMAND} -E env RCTS_TEST_FAIL_WRITE=report.tiny.cpu.html
                          ${RCTS} run ${CASE} --backend cpu --report ${dir} --report-replace
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "--report: .*report.tiny.cpu.html.*No space left on device" OR NOT EXISTS ${page})
    message(FATAL_ERROR "a failed page write was not reported (${rc}):\n${out}${err}")
  endif()
  return()
endif()

set(flags --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir=${OUT}/profile)
execute_process(COMMAND ${CHROMIUM} ${flags} --dump-dom file://${page} RESULT_VARIABLE rc OUTPUT_VARIABLE dom
                ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "chromium --dump-dom failed (${rc}):\n${err}")
endif()
string(REGEX MATCHALL "<svg[^>]*class=\"chart" charts "${dom}")
list(LENGTH charts n)
# Per rank: per layer, per module, and a timeline per run (3 runs).
if(n LESS 5)
  message(FATAL_ERROR "the rendered page holds ${n} charts, expected 5:\n${dom}")
endif()
foreach(want "data-bytes=\"1248\"" "class=\"peak\"[^>]*data-bytes=\"2496\"" "<polyline class=\"host\"" "<rect[^>]*class=\"model\""
        "PASS")
  if(NOT dom MATCHES "${want}")
    message(FATAL_ERROR "the rendered page lacks ${want}:\n${dom}")
  endif()
endforeach()
execute_process(COMMAND ${CHROMIUM} ${flags} --dump-dom file://${dir}/index.html OUTPUT_VARIABLE index TIMEOUT 60)
if(NOT index MATCHES "<a href=\"report.tiny.cpu.html\">report.tiny</a>")
  message(FATAL_ERROR "index.html does not link the case:\n${index}")
endif()
execute_process(COMMAND ${CHROMIUM} ${flags} --hide-scrollbars --window-size=1000,900 --screenshot=${OUT}/page.png
                file://${page} RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT EXISTS ${OUT}/page.png)
  message(FATAL_ERROR "chromium --screenshot failed (${rc}):\n${err}")
endif()
execute_process(COMMAND python3 ${CMAKE_CURRENT_LIST_DIR}/png_colours.py ${OUT}/page.png RESULT_VARIABLE rc
                OUTPUT_VARIABLE colours ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR colours LESS 8)
  message(FATAL_ERROR "the screenshot looks blank (${colours} colours, ${rc}):\n${err}")
endif()
