# The exact tier's device code must hold only correctly rounded, unfused IEEE float
# operations (design §2): compile a source to PTX with the exact flags and reject
# approximate (.approx), flush-to-zero (.ftz) and fused (fma/mad on floats)
# instructions. To prove the scan can fail, the same source compiled with nvcc's
# default contraction must show fused instructions.
# cmake -DNVCC=... -DSOURCE=... -DINCLUDE=... -DARCH=... -DFLAGS="a;b" -DOUT=dir -P ptx_scan.cmake
set(_forbidden "\\.approx|\\.ftz|fma\\.rn\\.f(16|32|64)|mad(\\.rn)?\\.f(32|64)")
file(MAKE_DIRECTORY ${OUT})
function(ptx name flags)
  execute_process(COMMAND ${NVCC} -std=c++17 -ptx -arch=sm_${ARCH} ${flags} -I${INCLUDE} ${SOURCE} -o ${OUT}/${name}.ptx
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc -ptx failed (${name}): ${err}")
  endif()
  file(READ ${OUT}/${name}.ptx text)
  string(REGEX MATCHALL "[^\n]*(${_forbidden})[^\n]*" hits "${text}")
  set(${name}_hits "${hits}" PARENT_SCOPE)
endfunction()

ptx(exact "${FLAGS}")
if(exact_hits)
  list(LENGTH exact_hits n)
  list(SUBLIST exact_hits 0 5 first)
  string(REPLACE ";" "\n  " first "${first}")
  message(FATAL_ERROR "${SOURCE}: ${n} approximate, flush-to-zero or fused instructions under the exact flags, e.g.\n  ${first}")
endif()
ptx(default "")
if(NOT default_hits)
  message(FATAL_ERROR "the scan found nothing in the default build either: it cannot tell the flags apart")
endif()
list(LENGTH default_hits n)
message(STATUS "exact PTX clean; the default build has ${n} fused instructions (the scan sees them)")
