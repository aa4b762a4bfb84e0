// Config problems: one ConfigIssue per broken rule (a stable code, a message naming
// the fields and values), and ConfigError, the rcts::Error thrown for them. Cases
// with a `config_error` expectation compare ConfigError::code().
#pragma once
#include <string>
#include <vector>

#include "reference/core/error.hpp"

namespace rcts {

struct ConfigIssue {
  std::string code;                 // stable rule code, e.g. "recompute.num_layers_range"
  std::string message;              // names the fields and their values
  std::vector<std::string> fields;  // "section.field", e.g. "recompute.recompute_num_layers"
};

class ConfigError : public Error {
 public:
  ConfigError(std::string code, std::string path, const std::string& message,
              std::vector<ConfigIssue> issues = {},
              SourceLocation loc = SourceLocation::current())
      : Error(message, loc), code_(std::move(code)), path_(std::move(path)),
        issues_(std::move(issues)) {}

  // Rule code ("json.unknown_key", "json.type" or a validate() code).
  const std::string& code() const { return code_; }
  // JSON pointer of the offending value ("/recompute/recompute_num_layers"), or "".
  const std::string& path() const { return path_; }
  // Every issue found (validate_or_throw); empty for JSON syntax errors.
  const std::vector<ConfigIssue>& issues() const { return issues_; }

 private:
  std::string code_;
  std::string path_;
  std::vector<ConfigIssue> issues_;
};

// "recompute.recompute_num_layers" -> "/recompute/recompute_num_layers".
inline std::string field_to_json_path(const std::string& field) {
  std::string p = "/" + field;
  for (char& c : p)
    if (c == '.') c = '/';
  return p;
}

}  // namespace rcts
