# RCTS_SANITIZE (included from the top-level CMakeLists.txt, before any target):
#   address  AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer, every UB
#            report fatal (-fno-sanitize-recover) so a finding fails its test
#   thread   ThreadSanitizer (run with OMP_NUM_THREADS=1: libgomp is not instrumented,
#            so its barriers look like races; scripts/test --sanitize thread sets it)
# Sanitizers change neither the arithmetic nor -ffp-contract=off: the goldens must pass.
# scripts/test --sanitize address|thread builds into build-asan / build-tsan.
set(RCTS_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan), thread (TSan) or empty")
set_property(CACHE RCTS_SANITIZE PROPERTY STRINGS "" address thread)
if(RCTS_SANITIZE STREQUAL "address")
  set(_rcts_sanitize -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
elseif(RCTS_SANITIZE STREQUAL "thread")
  set(_rcts_sanitize -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT RCTS_SANITIZE STREQUAL "")
  message(FATAL_ERROR "RCTS_SANITIZE='${RCTS_SANITIZE}': expected address, thread or empty")
endif()
if(_rcts_sanitize)
  add_compile_options(${_rcts_sanitize})
  add_link_options(${_rcts_sanitize})
  message(STATUS "rcts: sanitizer build (${RCTS_SANITIZE})")
endif()
