// A double's 64 bits as golden files and dumps write them (design §10, dump-format.md):
// "0x" and 16 lowercase hex digits, 0.5 -> "0x3fe0000000000000". Golden files, dumps
// and failure messages all spell bits this one way, so a value written by one is read
// or compared by another bit for bit.
#pragma once
#include <string>
#include <string_view>

namespace rcts::harness {

std::string double_hex_bits(double v);

// Whether `s` is exactly that spelling (what golden files are checked against on read).
bool is_double_hex_bits(std::string_view s);

}  // namespace rcts::harness
