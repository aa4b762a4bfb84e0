// Text from outside rcts (skip markers, file names, reasons that quote them) made safe
// for where it goes: a terminal, where an ANSI escape would recolour or rewrite the
// screen; a JSON writer, which refuses invalid UTF-8; markdown and HTML, where a raw
// tag would become markup. One definition each, used by every writer.
#pragma once
#include <streambuf>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rcts::harness {

// Control characters (C0 but tab and newline, and DEL) as visible "\xHH".
std::string visible_controls(std::string_view s);
// Invalid UTF-8 sequences replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// JSON text of `j` (indent as nlohmann's dump), invalid UTF-8 in strings as U+FFFD:
// every JSON rcts writes or sends goes through here, so it never throws on bytes.
std::string json_text(const nlohmann::json& j, int indent = -1);

// A stream buffer that forwards to `to` with visible_controls applied byte by byte:
// main() puts it under std::cout, so nothing rcts prints can drive the terminal.
class VisibleControlsBuffer : public std::streambuf {
 public:
  explicit VisibleControlsBuffer(std::streambuf* to) : to_(to) {}
  // errno when forwarding first failed (0: never, or the OS did not say), for the message.
  int first_error() const { return first_error_; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  int failed(int result);  // notes errno when `result` says forwarding failed
  std::streambuf* to_;
  int first_error_ = 0;
};

}  // namespace rcts::harness
