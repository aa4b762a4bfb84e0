// Megatron-LM arguments from YAML (yaml-cpp): a mapping of argument names to values,
// the form of Megatron-LM's functional-test model_config.yaml (under MODEL_ARGS) or a
// flat `num_layers: 24` file. See megatron_args.hpp.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>

#include "reference/config/limits.hpp"

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

// Walks the YAML events before a node is built: the documents, their nesting depth and
// any anchor or alias (which could make a small text a huge tree), each refused.
class Screen : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { anchor(m, a); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { refuse(m, "anchors and aliases (&name, *name) are not read"); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string&) override { anchor(m, a); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnMapEnd() override { --depth_; }

  struct Refused {
    std::string what;
  };

 private:
  [[noreturn]] static void refuse(const YAML::Mark& m, const std::string& what) {
    throw Refused{"line " + std::to_string(m.line + 1) + ": " + what};
  }
  static void anchor(const YAML::Mark& m, YAML::anchor_t a) {
    if (a != YAML::NullAnchor) refuse(m, "anchors and aliases (&name, *name) are not read");
  }
  void open(const YAML::Mark& m, YAML::anchor_t a) {
    anchor(m, a);
    if (++depth_ > limits::kMaxYamlDepth)
      refuse(m, "nested deeper than " + std::to_string(limits::kMaxYamlDepth) + " levels");
  }
  int depth_ = 0;
};

// Empty when the text is one document of at most kMaxYamlDepth levels without anchors
// or aliases, else why not.
std::string screen(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  Screen s;
  int docs = 0;
  try {
    while (parser.HandleNextDocument(s))
      if (++docs > 1) return std::to_string(docs) + " YAML documents (---); give one";
  } catch (const Screen::Refused& r) {
    return r.what;
  } catch (const YAML::Exception& e) {
    return std::string("not YAML: ") + e.what();
  }
  return "";
}

}  // namespace

std::vector<MegatronArg> megatron_args_from_yaml(const std::string& text, const std::string& where,
                                                 std::vector<std::string>& problems) {
  if (const std::string why = screen(text); !why.empty()) {
    problems.push_back(where + ": " + why);
    return {};
  }
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
    if (!kv.first.IsScalar()) {
      problems.push_back(where + " (" + at(kv.first) + "): keys are plain names of Megatron-LM arguments");
      continue;
    }
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
          problems.push_back(where + " (" + at(item) + "): " + key + ": list items must be plain values");
          continue;
        }
        a.values.push_back(item.as<std::string>());
      }
    } else if (!v.IsNull()) {
      problems.push_back(where + " (" + at(v) + "): " + key + ": expected a value, a list, true or false");
      continue;
    }
    args.push_back(std::move(a));
  }
  return args;
}

}  // namespace rcts::harness
