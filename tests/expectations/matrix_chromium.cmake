# rcts matrix over three hand-written reports (tests/expectations/data/matrix_*.json:
# rcts at 1 and 2 ranks, an adapter's check under an expectation file) rendered in
# headless Chromium: the page loads nothing and runs no script, its table has the
# hand-placed cells (a regression with its first divergence in the title and a
# detail, an expected failure, the skip of a 2-rank case at 1 rank, an absent cell),
# and its screenshot is not blank. Without chromium: "SKIPPED: ...".
# -DRCTS=<rcts> -DDATA=<data dir> -DPNG_COLOURS=<png_colours.py> -DOUT=<dir>
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
find_program(CHROMIUM NAMES chromium chromium-browser)
if(NOT CHROMIUM)
  message("SKIPPED: chromium is not installed (Debian: apt-get install chromium; scripts/install-deps --test)")
  return()
endif()
set(page ${OUT}/matrix.html)
execute_process(COMMAND ${RCTS} matrix ${DATA}/matrix_rcts_np1.json ${DATA}/matrix_rcts_np2.json ${DATA}/matrix_torch.json
                        --html ${page} --markdown ${OUT}/matrix.md RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS ${page})
  message(FATAL_ERROR "rcts matrix failed (${rc}):\n${out}${err}")
endif()
file(READ ${page} html)
if(html MATCHES "<script|<link|src=|https?:")
  message(FATAL_ERROR "the page is not self-contained:\n${html}")
endif()
set(flags --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --user-data-dir=${OUT}/profile)
execute_process(COMMAND ${CHROMIUM} ${flags} --dump-dom file://${page} RESULT_VARIABLE rc OUTPUT_VARIABLE dom
                ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "chromium --dump-dom failed (${rc}):\n${err}")
endif()
string(REGEX MATCHALL "<tr><th class=\"case\">" rows "${dom}")
list(LENGTH rows n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "the rendered table has ${n} case rows, expected 3:\n${dom}")
endif()
foreach(want
    # header: the adapter's column named by its expectation file, with its version
    "<th [^>]*>pytorch-reentrant np1<br><span class=\"sub\">torch 2.15.0; torch-cpu, 1 rank\\(s\\)</span></th>"
    # the regression: failing checks, verdict, first divergence on hover, a numbered detail
    "<td class=\"fail\" data-outcome=\"fail\" data-verdict=\"regression\" title=\"first divergence \\(block1\\): step 0 micro-batch 0, recompute dropout draw: mask of layers.0.attention.dropout differs\">fail: masks \\(regression\\) <a href=\"#d1\">\\[1\\]</a></td>"
    "<li id=\"d1\"><b>full.block.f32</b> · pytorch-reentrant np1: fail: masks \\(regression\\)<pre>first divergence"
    "<td class=\"expected\" data-outcome=\"fail\" data-verdict=\"expected-fail\"[^>]*>expected-fail: memory"
    "<td class=\"skip\" data-outcome=\"skip\" title=\"needs 2 ranks, this run has 1\">skip: needs 2 ranks, this run has 1</td><td class=\"pass\""
    "<td class=\"absent\" title=\"not in this report\">—</td>"
    "<td>1 fail, 1 skip, 1 expected</td>")
  if(NOT dom MATCHES "${want}")
    message(FATAL_ERROR "the rendered page lacks ${want}:\n${dom}")
  endif()
endforeach()
execute_process(COMMAND ${CHROMIUM} ${flags} --hide-scrollbars --window-size=1000,600 --screenshot=${OUT}/matrix.png
                file://${page} RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT EXISTS ${OUT}/matrix.png)
  message(FATAL_ERROR "chromium --screenshot failed (${rc}):\n${err}")
endif()
execute_process(COMMAND python3 ${PNG_COLOURS} ${OUT}/matrix.png RESULT_VARIABLE rc OUTPUT_VARIABLE colours ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR colours LESS 8)
  message(FATAL_ERROR "the screenshot looks blank (${colours} colours, ${rc}):\n${err}")
endif()
file(READ ${OUT}/matrix.md md)
string(FIND "${md}" "| `gdn.tp2` | skip: needs 2 ranks, this run has 1 | pass | skip: needs 2 ranks, this check has 1 |" at)
if(at LESS 0)
  message(FATAL_ERROR "the markdown table lacks the gdn.tp2 row:\n${md}")
endif()
