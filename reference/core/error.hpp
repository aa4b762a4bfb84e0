// rcts error type: every failure carries a message that names what went wrong
// (tensor, file, key, value) and the source location that raised it.
#pragma once
#include <stdexcept>
#include <string>

namespace rcts {

// Where an error was raised. std::source_location would do, but clang 14 with
// libstdc++ 12 lacks it; the builtins work in g++ and clang alike.
struct SourceLocation {
  const char* file = "";
  unsigned line = 0;
  static constexpr SourceLocation current(const char* f = __builtin_FILE(), unsigned l = __builtin_LINE()) {
    return {f, l};
  }
  const char* file_name() const { return file; }
  unsigned line_number() const { return line; }
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what,
                 SourceLocation loc = SourceLocation::current())
      : std::runtime_error(what + " [" + short_file(loc.file_name()) + ":" +
                           std::to_string(loc.line_number()) + "]"),
        message_(what) {}
  // The message without the source location (for reports and tests).
  const std::string& message() const { return message_; }

 private:
  static std::string short_file(const char* f) {
    std::string s(f);
    auto pos = s.rfind("/rcts/");
    for (const char* top : {"/reference/", "/kernels/", "/backends/", "/harness/", "/tests/"}) {
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
