// The one JSON parser for everything rcts reads (case files, config files, golden
// files). A SAX pass over the text runs first and rejects, before any json value is
// built: nesting deeper than limits::kMaxJsonDepth (a deep value would overflow the
// stack when copied or printed), duplicate keys in an object, numbers out of range
// of a double, invalid UTF-8 and syntax errors. Every error is an rcts::Error
// naming the source, the JSON pointer path, the offending text and line/column.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace rcts::harness {

// `source` names the text in errors (a file name).
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

// Reads and parses a regular file of at most limits::kMaxJsonFileBytes. `what`
// says what the file is for errors ("case file", "config file", "golden file").
nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);

}  // namespace rcts::harness
