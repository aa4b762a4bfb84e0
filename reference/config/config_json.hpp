// Config <-> JSON. Layout: {"model": {...}, "parallel": {...}, "recompute": {...},
// "offload": {...}, "run": {...}}, keys are the C++ field names, every section and
// key optional (defaults from config.hpp), optionals may be null.
//
// Strict: an unknown key, a wrong JSON type (2.0 is not an int) or a value outside its
// field's domain (validate_fields) throws ConfigError naming `where` (e.g. the case
// file), the JSON pointer and the value. Cross-field rules are left to validate(), so
// a case can load a deliberately invalid config and expect its rule code. `at` is the
// JSON pointer of the config inside `where` ("/config" in a case file), so that every
// message names the value's full path in that file.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "reference/config/config.hpp"

namespace rcts {

Config config_from_json(const nlohmann::json& j, const std::string& where, const std::string& at = "");
// Every field, optionals as null; config_from_json(config_to_json(c)) == c.
nlohmann::json config_to_json(const Config& c);
// Merges a partial config object onto `base` (case variants): sections merge key by
// key, arrays and values replace, null resets an optional. Same strictness.
Config apply_overrides(const Config& base, const nlohmann::json& patch, const std::string& where,
                      const std::string& at = "");

}  // namespace rcts
