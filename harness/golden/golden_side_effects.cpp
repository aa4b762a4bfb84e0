#include "harness/golden/golden_side_effects.hpp"
#include "harness/io/hex_bits.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"

namespace rcts::harness {

namespace {

// "0x... (value)"; the hex is checked on read, so it always decodes.
std::string shown(const std::string& hex) {
  const uint64_t u = std::stoull(hex.substr(2), nullptr, 16);
  double v;
  std::memcpy(&v, &u, sizeof v);
  std::ostringstream os;
  os.precision(17);
  os << hex << " (" << v << ")";
  return os.str();
}

}  // namespace

SideEffectBits side_effect_bits(const std::map<std::string, double>& side_effects) {
  SideEffectBits out;
  for (const auto& [key, value] : side_effects) out[key] = double_hex_bits(value);
  return out;
}

std::optional<SideEffectBits> side_effects_from_json(const nlohmann::json& golden, const std::string& where) {
  if (!golden.is_object() || !golden.contains("side_effects")) return std::nullopt;
  const nlohmann::json& j = golden.at("side_effects");
  if (!j.is_object())
    throw Error(where + ": /side_effects must be an object of hex bits, got " + j.dump() +
                "; regenerate it with scripts/regen-golden");
  SideEffectBits out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string() || !is_double_hex_bits(value.get<std::string>()))
      throw Error(where + ": " + (nlohmann::json::json_pointer("/side_effects") / key).to_string() + " = " + value.dump() +
                  " is not the hex bits of a double (\"0x\" and 16 lower-case hex digits)");
    out[key] = value.get<std::string>();
  }
  return out;
}

std::vector<std::string> side_effect_changes(const std::optional<SideEffectBits>& before,
                                             const std::optional<SideEffectBits>& after) {
  const SideEffectBits none;
  const SideEffectBits& a = before ? *before : none;
  const SideEffectBits& b = after ? *after : none;
  std::vector<std::string> out;
  for (const auto& [key, bits] : b) {
    auto it = a.find(key);
    if (it == a.end()) out.push_back("side effect " + key + ": new " + shown(bits));
    else if (it->second != bits) out.push_back("side effect " + key + ": " + shown(it->second) + " -> " + shown(bits));
  }
  for (const auto& [key, bits] : a)
    if (!b.count(key)) out.push_back("side effect " + key + ": removed (was " + shown(bits) + ")");
  return out;
}

}  // namespace rcts::harness
