// The case patterns of expectation entries (docs/expectations.md): a case id, or a glob
// over case ids: '*' (any run of characters, dots included), '?' (one character), '[set]'
// and '[!set]' (one character of the set, or not of it; a set holds characters and
// ranges such as a-z, '-' first or last is itself, ']' first is itself). rcts matches them
// itself rather than through fnmatch(3), so what it accepts is exactly what it matches:
// whatever fnmatch would read another way, or that could never match a case id (an
// unclosed '[', a backslash, a POSIX class, a reversed range, a NUL or any character a
// case id cannot hold), is refused.
#pragma once
#include <optional>
#include <string>

namespace rcts::harness {

// Why `pattern` is not a case pattern, naming the offset and the character; nullopt
// when it is one.
std::optional<std::string> case_pattern_error(const std::string& pattern);

// Whether the (valid) pattern matches the whole of `id`.
bool case_pattern_matches(const std::string& pattern, const std::string& id);

// Whether the pattern holds a glob character ('*', '?', '['); else it names one case.
bool is_case_glob(const std::string& pattern);

}  // namespace rcts::harness
