// Megatron-LM arguments from YAML (yaml-cpp): a mapping of argument names to values,
// the form of Megatron-LM's functional-test model_config.yaml (under MODEL_ARGS) or a
// flat `num_layers: 24` file. See megatron_args.hpp.
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "harness/megatron/megatron_args.hpp"

namespace rcts::harness {
namespace {

std::string arg_name(std::string key) {
  if (key.rfind("--", 0) != 0) key = "--" + key;
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

std::string at(const YAML::Node& n) {
  return "line " + std::to_string(n.Mark().line + 1);
}

}  // namespace

std::vector<MegatronArg> megatron_args_from_yaml(const std::string& text, const std::string& where,
                                                 std::vector<std::string>& problems) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    problems.push_back(where + ": not YAML: " + e.what());
    return {};
  }
  if (root.IsMap() && root["MODEL_ARGS"]) root = root["MODEL_ARGS"];
  if (!root.IsMap()) {
    problems.push_back(where + ": expected a mapping of Megatron-LM arguments to values (or one under MODEL_ARGS)");
    return {};
  }
  std::vector<MegatronArg> args;
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    MegatronArg a{arg_name(key), {}};
    if (v.IsScalar()) {
      const std::string s = v.as<std::string>();
      if (s == "false") continue;  // a flag not given
      if (s != "true") a.values.push_back(s);
    } else if (v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar()) {
          problems.push_back(key + " (" + at(item) + "): list items must be plain values");
          continue;
        }
        a.values.push_back(item.as<std::string>());
      }
    } else if (!v.IsNull()) {
      problems.push_back(key + " (" + at(v) + "): expected a value, a list, true or false");
      continue;
    }
    args.push_back(std::move(a));
  }
  return args;
}

}  // namespace rcts::harness
