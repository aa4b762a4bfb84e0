# scripts/conformance shows its build and builds only what it runs:
# with a stand-in cmake on PATH (it records its arguments and prints a progress line),
# a stand-in dpkg-query (everything installed) and a stand-in rcts in RCTS_BUILD_DIR (it
# lists one single-rank case, records its runs and echoes merge-reports), the script
# must build with `--target rcts` only, never the whole tree, show the progress line on
# stderr (stdout stays the merged summary), and pass --filter to `rcts list` and its
# arguments to `rcts run`. tests/cases/conformance_e2e.cmake runs it on a real rcts.
# -DSRC=<source tree> -DOUT=<scratch dir>
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT}/bin ${OUT}/build/harness)
file(WRITE ${OUT}/bin/cmake "#!/bin/sh\necho \"$*\" >> '${OUT}/cmake.log'\ncase \"$1\" in --build) echo '[ 42%] Building CXX object harness/main.cpp.o';; esac\n")
file(WRITE ${OUT}/bin/dpkg-query "#!/bin/sh\necho 'install ok installed'\n")
file(WRITE ${OUT}/build/harness/rcts "#!/bin/sh
echo \"$*\" >> '${OUT}/rcts.log'
case \"$1\" in
  list) printf 'full.x\\t${OUT}/x.json\\t1\\tcpu\\t0\\n' ;;
  run) while [ $# -gt 0 ]; do [ \"$1\" = --json ] && echo '{}' > \"$2\"; shift; done ;;
  *) echo \"stand-in rcts: $*\" ;;
esac
")
foreach(f bin/cmake bin/dpkg-query build/harness/rcts)
  file(CHMOD ${OUT}/${f} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env "PATH=${OUT}/bin:$ENV{PATH}" RCTS_BUILD_DIR=${OUT}/build
                        bash ${SRC}/scripts/conformance --filter "full.*"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(EXISTS ${OUT}/cmake.log)
  file(READ ${OUT}/cmake.log calls)
else()
  set(calls "")
endif()
set(problems "")
if(NOT rc EQUAL 0)
  string(APPEND problems "exit ${rc}\n")
endif()
string(REGEX MATCHALL "--build [^\n]*" builds "${calls}")
if(NOT builds)
  string(APPEND problems "no build step\n")
endif()
foreach(b IN LISTS builds)
  if(NOT b MATCHES "--target rcts$")
    string(APPEND problems "a build beyond the rcts target: '${b}'\n")
  endif()
endforeach()
if(NOT err MATCHES "\\[ 42%\\] Building CXX object")
  string(APPEND problems "the build's progress is not shown on stderr\n")
endif()
if(NOT out MATCHES "^stand-in rcts: merge-reports 1=[^ ]*/np1\\.json\n$")
  string(APPEND problems "stdout is not the merged summary alone\n")
endif()
file(READ ${OUT}/rcts.log runs)
if(NOT runs MATCHES "^list --tsv ${SRC}/cases --filter full\\.\\*\nrun ${OUT}/x\\.json --progress --json [^ ]*/np1\\.json --filter full\\.\\*\nmerge-reports ")
  string(APPEND problems "rcts was not called as list, run (with the arguments), merge-reports:\n${runs}\n")
endif()
if(problems)
  message(FATAL_ERROR "${problems}cmake calls:\n${calls}\nstdout:\n${out}\nstderr:\n${err}")
endif()
message(STATUS "scripts/conformance built: ${builds}")
