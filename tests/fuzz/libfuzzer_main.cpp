// libFuzzer target (RCTS_FUZZ=ON, clang): the parse entry on every generated input.
// How to build and run it: tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rcts::fuzz::parse_input({reinterpret_cast<const char*>(data), size});
  return 0;
}
