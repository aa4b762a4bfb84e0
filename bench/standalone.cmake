# Builds bench/ without the top-level `add_subdirectory(bench)` line:
#   cmake -S . -B build -DCMAKE_PROJECT_INCLUDE=$PWD/bench/standalone.cmake
# CMake includes this file at the end of project(); the deferred call runs after the
# top-level CMakeLists.txt has been read (where add_subdirectory(bench) would go) and
# includes bench/CMakeLists.txt into the top-level scope (deferred calls may not add
# subdirectories). Harmless once the top level adds bench itself: the guard skips it.
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _rcts_bench_standalone)
function(_rcts_bench_standalone)
  if(NOT TARGET rcts-bench)
    include(${CMAKE_SOURCE_DIR}/bench/CMakeLists.txt)
  endif()
endfunction()
