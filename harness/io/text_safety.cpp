#include "harness/io/text_safety.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>

namespace rcts::harness {

namespace {
bool is_control(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f; }

std::string hex_escape(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", c);
  return buf;
}
}  // namespace

std::string visible_controls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_control(c)) out += hex_escape(c);
    else out += ch;
  }
  return out;
}

std::string valid_utf8(std::string_view s) {
  static const std::string replacement = "\xef\xbf\xbd";
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len > 1) {  // no overlong forms, surrogates or code points past U+10FFFF
      uint32_t cp = c & (0xff >> (len + 1));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += replacement;
      ++i;
    }
  }
  return out;
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

int VisibleControlsBuffer::failed(int result) {
  if (first_error_ == 0) first_error_ = errno;
  return result;
}

int VisibleControlsBuffer::sync() {
  errno = 0;
  const int r = to_->pubsync();
  return r == 0 ? 0 : failed(r);
}

VisibleControlsBuffer::int_type VisibleControlsBuffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  errno = 0;
  if (!is_control(static_cast<unsigned char>(ch))) {
    const int_type r = to_->sputc(ch);
    return traits_type::eq_int_type(r, traits_type::eof()) ? failed(r) : r;
  }
  const std::string e = hex_escape(static_cast<unsigned char>(ch));
  return to_->sputn(e.data(), static_cast<std::streamsize>(e.size())) == static_cast<std::streamsize>(e.size())
             ? c
             : failed(traits_type::eof());
}

std::streamsize VisibleControlsBuffer::xsputn(const char* s, std::streamsize n) {
  std::streamsize done = 0, start = 0;
  for (std::streamsize i = 0; i <= n; ++i) {
    if (i < n && !is_control(static_cast<unsigned char>(s[i]))) continue;
    const std::streamsize run = i - start;  // the printable bytes before s[i]
    errno = 0;
    if (run > 0 && to_->sputn(s + start, run) != run) {
      failed(0);
      return done;
    }
    done += run;
    if (i < n) {
      if (traits_type::eq_int_type(overflow(traits_type::to_int_type(s[i])), traits_type::eof())) return done;
      ++done;
    }
    start = i + 1;
  }
  return done;
}

}  // namespace rcts::harness
