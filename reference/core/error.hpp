// rcts error type: every failure carries a message that names what went wrong
// (tensor, file, key, value) and the source location that raised it.
#pragma once
#include <source_location>
#include <stdexcept>
#include <string>

namespace rcts {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what,
                 std::source_location loc = std::source_location::current())
      : std::runtime_error(what + " [" + short_file(loc.file_name()) + ":" +
                           std::to_string(loc.line()) + "]"),
        message_(what) {}
  // The message without the source location (for reports and tests).
  const std::string& message() const { return message_; }

 private:
  static std::string short_file(const char* f) {
    std::string s(f);
    auto pos = s.rfind("/rcts/");
    for (const char* top : {"/reference/", "/kernels/", "/harness/", "/tests/"}) {
      auto p = s.find(top);
      if (p != std::string::npos) return s.substr(p + 1);
    }
    return pos == std::string::npos ? s : s.substr(pos + 6);
  }
  std::string message_;
};

#define RCTS_CHECK(cond, msg)                      \
  do {                                             \
    if (!(cond)) throw ::rcts::Error(msg);         \
  } while (0)

}  // namespace rcts
