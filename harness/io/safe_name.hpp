// The safe file-name rule, the one used for every name rcts and the adapter kit
// (adapters/kit/rcts_adapter_kit/layout.py) turn into a file or directory name: a dump's
// case, backend and run directories, its .npy files, rcts expect's skip markers. The
// same examples (tests/support/file_names.json) pin both.
#pragma once
#include <cstddef>
#include <string>

namespace rcts::harness {

// Every byte outside [A-Za-z0-9._-] becomes '_', and so do leading dots (no hidden files,
// no "." or ".."); a result of more than kMaxSafeStem bytes keeps its first 183, then '-'
// and the first 16 hex digits of the sha256 of the whole name (a name stays below any
// file system's limit with room for a suffix, and two long names never share a file);
// an empty name becomes "unnamed".
inline constexpr size_t kMaxSafeStem = 200;
std::string safe_file_stem(const std::string& s);

}  // namespace rcts::harness
