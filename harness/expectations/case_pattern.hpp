// The case patterns of expectation entries (docs/expectations.md): a case id, or a glob
// over case ids: '*' (any run of characters, dots included), '?' (one character), '[set]'
// and '[!set]' (one character of the set, or not of it; a set holds characters and
// ranges such as a-z, '-' first or last is itself, ']' first is itself). rcts matches them
// itself rather than through fnmatch(3), so what it accepts is exactly what it matches:
// whatever fnmatch would read another way, or that could never match a case id (an
// unclosed '[', a backslash, a POSIX class, a reversed range, a NUL or any character a
// case id cannot hold), is refused. Skip and error reasons are matched by the same
// code over a wider alphabet (reason_pattern_*).
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

// The reason patterns of "skip" and "error" entries: the same glob, over free text. Any
// printable character (and UTF-8) stands for itself, a backslash included; a '*', '?' or
// '[' of the text itself is written as a one-character set ([*], [?], [[]). Refused: an
// empty pattern, a control character, an unclosed '[', a POSIX class, a reversed range,
// a non-ASCII byte inside a set.
std::optional<std::string> reason_pattern_error(const std::string& pattern);
bool reason_pattern_matches(const std::string& pattern, const std::string& text);
// The pattern that matches exactly `text` (what --update-expectations proposes); a
// control character becomes '?'.
std::string literal_reason_pattern(const std::string& text);

}  // namespace rcts::harness
