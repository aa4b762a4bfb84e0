// libFuzzer target (RCTS_FUZZ=ON, clang) of the dump reader: manifest and npy header
// (fuzz_entry.hpp parse_dump_input). How to run it: scripts/fuzz.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rcts::fuzz::parse_dump_input({reinterpret_cast<const char*>(data), size});
  return 0;
}
