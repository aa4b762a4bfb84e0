#include "harness/expectations/case_pattern.hpp"

#include <algorithm>
#include <cstdio>

namespace rcts::harness {

namespace {

// The characters of a case id (harness/cases/case.cpp: letters, digits, '.', '_', '-').
bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", u);
  return std::string("byte ") + hex;
}

std::string at(size_t i, char c) { return shown(c) + " at offset " + std::to_string(i); }

// A character free text may hold: printable ASCII and the bytes of UTF-8 sequences.
bool text_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u != 0x7f;
}

// A set's member: for case ids an id character; for free text printable ASCII (a byte of
// a multi-byte UTF-8 character in a set would match one byte, not the character).
using Alphabet = bool (*)(char);
bool text_set_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x7f;
}

// The end of the set that opens at `open` (the index of its ']'), or an error.
std::optional<std::string> set_error(const std::string& p, size_t open, size_t& close, Alphabet member = id_char) {
  size_t j = open + 1;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) ++j;
  const size_t first = j;
  for (; j < p.size(); ++j) {
    const char c = p[j];
    if (c == ']' && j > first) {
      close = j;
      return std::nullopt;
    }
    if (c == '[' && j + 1 < p.size() && (p[j + 1] == ':' || p[j + 1] == '=' || p[j + 1] == '.'))
      return "a POSIX class " + at(j, c) + " (list the characters instead)";
    if (c == ']') continue;  // first in the set: a member
    if (!member(c)) return at(j, c) + (member == id_char ? " in a set can never match a case id" : " in a set (printable ASCII only)");
    const bool range = c != '-' && j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']';
    if (!range) continue;
    const char hi = p[j + 2];
    if (!member(hi)) return at(j + 2, hi) + (member == id_char ? " in a set can never match a case id" : " in a set (printable ASCII only)");
    if (hi < c) return "the range " + std::string{c, '-', hi} + " at offset " + std::to_string(j) + " is reversed";
    j += 2;
  }
  return "an unclosed '[' at offset " + std::to_string(open);
}

// One character of `id` against the set p[open..close].
bool in_set(const std::string& p, size_t open, size_t close, char c) {
  size_t j = open + 1;
  const bool negate = p[j] == '!' || p[j] == '^';
  if (negate) ++j;
  bool hit = false;
  for (; j < close; ++j) {
    if (j + 2 < close && p[j + 1] == '-' && p[j] != '-' && p[j] != ']') {
      hit = hit || (c >= p[j] && c <= p[j + 2]);
      j += 2;
    } else {
      hit = hit || c == p[j];
    }
  }
  return hit != negate;
}

size_t set_end(const std::string& p, size_t open) {
  size_t close = 0;
  set_error(p, open, close, text_set_char);  // the wider alphabet: the pattern is valid already
  return close;
}

}  // namespace

std::optional<std::string> case_pattern_error(const std::string& p) {
  if (p.empty()) return "an empty case pattern";
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '*' || c == '?') continue;
    if (c == '[') {
      size_t close = 0;
      if (auto why = set_error(p, i, close)) return why;
      i = std::max(i, close);  // never backwards: the scan ends on any input
      continue;
    }
    if (c == '\\') return "a backslash at offset " + std::to_string(i) + ": case ids hold no character to escape";
    if (!id_char(c)) return at(i, c) + " can never match a case id (letters, digits, '.', '_', '-')";
  }
  return std::nullopt;
}

namespace {

// Iterative match with backtracking to the last '*'; the pattern is valid.
bool glob_matches(const std::string& p, const std::string& id) {
  size_t pi = 0, ti = 0, star = std::string::npos, mark = 0;
  while (ti < id.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
      continue;
    }
    if (pi < p.size()) {
      if (p[pi] == '[') {
        const size_t close = set_end(p, pi);
        if (close > pi && in_set(p, pi, close, id[ti])) {
          pi = close + 1;
          ++ti;
          continue;
        }
      } else if (p[pi] == '?' || p[pi] == id[ti]) {
        ++pi;
        ++ti;
        continue;
      }
    }
    if (star == std::string::npos) return false;
    pi = star + 1;
    ti = ++mark;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace

bool case_pattern_matches(const std::string& p, const std::string& id) { return glob_matches(p, id); }

bool is_case_glob(const std::string& p) { return p.find_first_of("*?[") != std::string::npos; }

std::optional<std::string> reason_pattern_error(const std::string& p) {
  if (p.find_first_not_of(' ') == std::string::npos) return "an empty reason pattern";
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '[') {
      size_t close = 0;
      if (auto why = set_error(p, i, close, text_set_char)) return *why + " (a '[' of the text itself is written [[])";
      i = std::max(i, close);  // never backwards, as above
    } else if (!text_char(p[i])) {
      return at(i, p[i]) + ": a reason holds no control characters";
    }
  }
  return std::nullopt;
}

bool reason_pattern_matches(const std::string& p, const std::string& text) { return glob_matches(p, text); }

std::string literal_reason_pattern(const std::string& text) {
  std::string p;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[') p += std::string{'[', c, ']'};
    else if (text_char(c)) p += c;
    else p += '?';  // a control character the report would not show as it is
  }
  return p;
}

}  // namespace rcts::harness
