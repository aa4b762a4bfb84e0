// Side effects in golden files: the baseline's side-effect values (each MoE layer's aux
// loss, each layer's tokens_seen), each as the hex bits of its double like the losses.
// The bitwise check compares side effects only between baseline and variants, so a bug
// that changes both alike (a wrong aux-loss formula) shows only against a golden file.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "harness/io/hex_bits.hpp"

namespace rcts::harness {

using SideEffectBits = std::map<std::string, std::string>;  // key -> double_hex_bits(value)

SideEffectBits side_effect_bits(const std::map<std::string, double>& side_effects);

// The golden file's "side_effects" object, or nullopt when the file has none (written
// before side effects were recorded: check_golden fails it, regen-golden lists them as
// new). Throws rcts::Error naming `where`, the JSON path and the value when the field
// is not an object of "0x" + 16 hex digit strings.
std::optional<SideEffectBits> side_effects_from_json(const nlohmann::json& golden, const std::string& where);

// One line per side effect that changed, appeared or disappeared (a missing `before`
// is an empty one), with the decoded values for the reader.
std::vector<std::string> side_effect_changes(const std::optional<SideEffectBits>& before,
                                             const std::optional<SideEffectBits>& after);

}  // namespace rcts::harness
