// The safe file-name rule, the one used for every name rcts and the adapter kit
// (adapters/kit/rcts_adapter_kit/layout.py) turn into a file or directory name: a dump's
// case, backend and run directories, its .npy files, rcts expect's skip markers. The
// same examples (tests/support/file_names.json) pin both.
#pragma once
#include <string>

namespace rcts::harness {

// Every byte outside [A-Za-z0-9._-] becomes '_', and so do leading dots (no hidden files,
// no "." or ".."); at most 200 bytes are kept (a name stays below any file system's
// limit with room for a suffix); an empty name becomes "unnamed".
std::string safe_file_stem(const std::string& s);

}  // namespace rcts::harness
